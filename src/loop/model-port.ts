/** The model port: what the engine sends the model (messages, tool schemas) and what comes back. */
import type { Message, ToolCall } from './messages.js';

/** The function schema sent to the model. */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those the server read from its prompt cache (`prompt_tokens_details.cached_tokens`). */
  cachedInputTokens?: number;
}

export interface ModelRequest {
  messages: readonly Message[];
  tools: readonly ToolSchema[];
  signal: AbortSignal;
  /** Upper bound for the reply's tokens, derived from the remaining token budget. */
  maxOutputTokens?: number;
  /**
   * Asks for the reply as a stream: each piece of its text is handed here as it arrives, in order, and the
   * promise still resolves with the complete reply (the pieces concatenated are its `content`). Absent:
   * the reply is asked for whole. Contract: must not throw; it is called inline while the reply streams.
   */
  onText?: (delta: string) => void;
}

export interface ModelReply {
  content: string | null;
  toolCalls: ToolCall[];
  /**
   * What the server reported; absent when it reported nothing. A missing or zero count is charged the
   * engine's estimate instead (src/loop/estimate.ts), never 0.
   */
  usage?: ModelUsage;
  /** The model that actually answered (prices are looked up by it). */
  model: string;
  /**
   * Why the model stopped, as the server said (`stop`, `tool_calls`, `length`, `content_filter`);
   * absent when it said nothing.
   */
  finishReason?: string;
  /** The model's refusal text, when it refused to answer. */
  refusal?: string;
}

/**
 * Contract: resolves with a reply, or rejects with `ModelError` once the adapter's own retries are
 * exhausted. Any other rejection is treated as a model error too.
 */
export interface ModelPort {
  /** The model asked for, when known: prices the estimate made before a call (else `defaultPrice`). */
  readonly model?: string;
  complete(request: ModelRequest): Promise<ModelReply>;
}
