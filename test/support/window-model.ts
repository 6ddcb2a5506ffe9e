import { ModelError } from '../../src/loop/errors.js';
import { requestTokens } from '../../src/loop/estimate.js';
import type { Message } from '../../src/loop/messages.js';
import type { ModelPort, ModelReply, ModelRequest } from '../../src/loop/model-port.js';
import { type ScriptStep, scriptedModel } from './engine.js';

/** A summary request of a compaction: no tools, and the summariser's instructions as system prompt. */
export const isSummaryRequest = (req: ModelRequest): boolean =>
  req.tools.length === 0 &&
  req.messages[0]?.role === 'system' &&
  req.messages[0].content.startsWith('You summarise');

/** Every tool call in `messages` is answered right after it, and every tool message answers a call. */
export function pairingProblem(messages: readonly Message[]): string | null {
  let open = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      if (!open.delete(m.toolCallId)) return `messages[${i}] answers ${m.toolCallId}, which is not open`;
      continue;
    }
    if (open.size > 0) return `messages[${i}] comes before ${[...open].join(', ')} were answered`;
    if (m.role === 'assistant' && m.toolCalls?.length) open = new Set(m.toolCalls.map((c) => c.id));
  }
  return open.size > 0 ? `calls not answered at the end: ${[...open].join(', ')}` : null;
}

export interface WindowModel extends ModelPort {
  /** Agent requests (not summaries), as sent. */
  requests: ModelRequest[];
  summaries: ModelRequest[];
  /** Requests refused as longer than the window. */
  refused: number;
  /** Problems seen in requests (pairing); empty when all were well formed. */
  problems: string[];
}

export interface WindowModelOptions {
  /** The window the "server" enforces: its own count plus the reply bound must fit. */
  windowTokens: number;
  /** The server counts this many times the engine's estimate (another tokenizer). Default 1. */
  tokenFactor?: number;
  /** What a summary says; default a fixed sentence naming the request number. */
  summary?: (req: ModelRequest, n: number) => string;
}

/**
 * A scripted agent model behind a "server" with a context window: it counts each request's tokens
 * (the engine's estimator times `tokenFactor`), refuses one that does not fit like a real server
 * (ModelError with `contextExceeded`), reports its count as usage, checks tool-call pairing, and
 * answers compaction summary requests itself.
 */
export function windowModel(script: ScriptStep[], options: WindowModelOptions): WindowModel {
  const agent = scriptedModel(script);
  const factor = options.tokenFactor ?? 1;
  const model: WindowModel = {
    model: 'test-model',
    requests: [],
    summaries: [],
    refused: 0,
    problems: [],
    async complete(req: ModelRequest): Promise<ModelReply> {
      const counted = Math.ceil(requestTokens(req.messages, req.tools) * factor);
      const problem = pairingProblem(req.messages);
      if (problem) model.problems.push(problem);
      if (counted + (req.maxOutputTokens ?? 0) > options.windowTokens) {
        model.refused++;
        throw new ModelError(
          `This model's maximum context length is ${options.windowTokens} tokens. However, you requested ${counted + (req.maxOutputTokens ?? 0)} tokens.`,
          { status: 400, retryable: false, contextExceeded: true },
        );
      }
      if (isSummaryRequest(req)) {
        model.summaries.push(req);
        const text = options.summary?.(req, model.summaries.length) ?? `Summary #${model.summaries.length}.`;
        return {
          content: text,
          toolCalls: [],
          usage: { inputTokens: counted, outputTokens: 20 },
          model: 'test-model',
        };
      }
      model.requests.push({ ...req, messages: [...req.messages] });
      const reply = await agent.complete(req);
      return { ...reply, usage: { inputTokens: counted, outputTokens: reply.usage?.outputTokens ?? 5 } };
    },
  };
  return model;
}
