/** Messages: the conversation the model sees. Plain JSON, close to Chat Completions but SDK-free. */

export interface ToolCall {
  /** Id chosen by the model; unique within the run. */
  id: string;
  name: string;
  /** Raw JSON text exactly as the model produced it (may be malformed). */
  arguments: string;
}

export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; name?: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };
