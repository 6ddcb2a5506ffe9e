import { z } from 'zod';
import { defineTool } from '../../src/loop/define-tool.js';
import type { EngineEvent } from '../../src/loop/engine-events.js';
import type { Message, ToolCall } from '../../src/loop/messages.js';
import type { ModelPort, ModelReply, ModelRequest } from '../../src/loop/model-port.js';
import type { EngineDeps } from '../../src/loop/ports.js';
import type { RunLimits } from '../../src/loop/run-limits.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import type { AnyTool, Logger } from '../../src/loop/tool-contract.js';

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

/**
 * What a scripted model says next: a reply, an error to throw, or a function of the request. A reply's
 * usage defaults to 10 input and 5 output tokens; `usage: null` reports none.
 */
export type ScriptStep =
  | { text: string; usage?: { inputTokens: number; outputTokens: number } | null }
  | {
      calls: Array<{ name: string; args: unknown | string; id?: string }>;
      text?: string;
      usage?: { inputTokens: number; outputTokens: number } | null;
    }
  | { throws: Error }
  | ((req: ModelRequest) => ScriptStep | Promise<ScriptStep>);

export const call = (name: string, args: unknown | string = {}, id?: string) => ({
  name,
  args,
  ...(id ? { id } : {}),
});

/** A model that replies from a script, records what it was asked, and fails loudly when the script ends. */
export function scriptedModel(
  script: ScriptStep[],
  model = 'test-model',
): ModelPort & { requests: ModelRequest[] } {
  const queue = [...script];
  const requests: ModelRequest[] = [];
  let n = 0;
  return {
    model,
    requests,
    async complete(req: ModelRequest): Promise<ModelReply> {
      requests.push({ ...req, messages: [...req.messages] });
      let next = queue.shift();
      if (!next) throw new Error('scripted model: script exhausted');
      while (typeof next === 'function') next = await next(req);
      if ('throws' in next) throw next.throws;
      const usage = next.usage === null ? {} : { usage: next.usage ?? { inputTokens: 10, outputTokens: 5 } };
      if ('calls' in next) {
        const toolCalls: ToolCall[] = next.calls.map((c) => ({
          id: c.id ?? `call_${n++}`,
          name: c.name,
          arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args),
        }));
        return { content: next.text ?? null, toolCalls, ...usage, model };
      }
      return { content: next.text, toolCalls: [], ...usage, model };
    },
  };
}

export function manualClock(start = 1_700_000_000_000) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

/** Test tools: a counting no-op read, a lookup read, a failing read, a slow read, a write and a notify. */
export function testTools() {
  const executed: Array<{ tool: string; args: unknown; key: string }> = [];
  const tools: AnyTool[] = [
    defineTool({
      name: 'lookup',
      description: 'Look up a service status',
      effect: 'read',
      parameters: z.object({ service: z.string() }),
      async execute(args) {
        executed.push({ tool: 'lookup', args, key: '' });
        return { service: args.service, status: 'ok' };
      },
    }),
    defineTool({
      name: 'noop',
      description: 'Does nothing',
      effect: 'read',
      parameters: z.object({}),
      async execute() {
        return 'ok';
      },
    }),
    defineTool({
      name: 'broken',
      description: 'Always fails',
      effect: 'read',
      parameters: z.object({}),
      async execute() {
        throw new Error('backend unavailable');
      },
    }),
    defineTool({
      name: 'slow',
      description: 'Never finishes in time',
      effect: 'read',
      timeoutMs: 30,
      parameters: z.object({}),
      async execute() {
        // Ignores the abort signal; far longer than any bound a test puts on a step that abandons it.
        await new Promise((r) => setTimeout(r, 10_000));
        return 'late';
      },
    }),
    defineTool({
      name: 'big',
      description: 'Returns a huge log',
      effect: 'read',
      parameters: z.object({ size: z.number().int() }),
      async execute(args) {
        return 'x'.repeat(args.size);
      },
    }),
    defineTool({
      name: 'restart',
      description: 'Restart a service',
      effect: 'write',
      parameters: z.object({ service: z.enum(['payments', 'search']) }),
      async preview(args) {
        return `POST /restart/${args.service}`;
      },
      async execute(args, ctx) {
        executed.push({ tool: 'restart', args, key: ctx.idempotencyKey });
        return { restarted: args.service };
      },
      async verify(args) {
        return { ok: true, summary: `${args.service} healthy` };
      },
    }),
    defineTool({
      name: 'announce',
      description: 'Post a message',
      effect: 'notify',
      parameters: z.object({ text: z.string().min(1) }),
      async execute(args, ctx) {
        executed.push({ tool: 'announce', args, key: ctx.idempotencyKey });
        return { posted: true };
      },
    }),
  ];
  return { executed, tools: new Map(tools.map((t) => [t.name, t])) };
}

export function newRun(limits: Partial<RunLimits> = {}, now = 1_700_000_000_000): RunState {
  return createRun({
    runId: 'run1',
    requester: { userId: 'UREQ' },
    systemPrompt: 'You are loopgate.',
    question: 'Is payments healthy?',
    limits,
    now,
  });
}

export function deps(model: ModelPort, extra: Partial<EngineDeps> = {}) {
  const events: EngineEvent[] = [];
  const { tools, executed } = testTools();
  const clock = manualClock();
  const d: EngineDeps = {
    model,
    tools,
    clock,
    emit: (e) => events.push(e),
    logger: silentLogger,
    ...extra,
  };
  return { deps: d, events, executed, clock };
}

/** Every tool call id of every assistant message has exactly one tool result, right after it, in order. */
export function assertWellFormed(state: RunState): void {
  const msgs = state.messages;
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i]!;
    if (m.role !== 'assistant' || !m.toolCalls || m.toolCalls.length === 0) continue;
    const open = state.turn !== null && i === msgs.length - 1;
    if (open) continue;
    const ids = m.toolCalls.map((c) => c.id);
    const following = msgs.slice(i + 1, i + 1 + ids.length);
    const got = following.map((f) => (f.role === 'tool' ? f.toolCallId : `<${f.role}>`));
    if (JSON.stringify(got) !== JSON.stringify(ids)) {
      throw new Error(`message ${i}: expected results ${ids.join(',')}, got ${got.join(',')}`);
    }
  }
  const ids = msgs.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : []));
  if (new Set(ids).size !== ids.length) throw new Error('tool call ids are not unique in the run');
}

/**
 * A problem with what the model was sent, or null: every tool call id has its result, in order. Fake
 * models record it rather than throw, because the engine turns a throwing model into a `model_error`
 * stop that a property accepting failed runs would let pass; tests assert the list is empty after the run.
 */
export function unansweredCallsProblem(messages: readonly Message[]): string | null {
  const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : []));
  const results = messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : []));
  if (JSON.stringify(calls) === JSON.stringify(results)) return null;
  return `model sent calls [${calls.join(',')}] with results [${results.join(',')}]`;
}

/** A model that reads one more service every step and never answers (only a budget stops it). */
export function endlessReader(): ModelPort & { calls: number } {
  const model = {
    model: 'test-model',
    calls: 0,
    async complete() {
      model.calls++;
      return {
        content: null,
        toolCalls: [
          {
            id: `c${model.calls}`,
            name: 'lookup',
            arguments: JSON.stringify({ service: `s${model.calls}` }),
          },
        ],
        usage: { inputTokens: 10, outputTokens: 5 },
        model: 'test-model',
      };
    },
  };
  return model;
}
