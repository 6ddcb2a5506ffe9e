/** Calls a tool the way the engine does: arguments through its zod schema, then execute/preview/verify. */
import type { AnyTool, Logger, ToolContext } from '../../src/loop/tool-contract.js';

const silent: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silent,
};

export function toolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    signal: new AbortController().signal,
    idempotencyKey: 'run-1:call-1',
    runId: 'run-1',
    toolCallId: 'call-1',
    requester: { userId: 'U0REQUESTER' },
    logger: silent,
    ...overrides,
  };
}

export function parseArgs(tool: AnyTool, args: unknown): unknown {
  return tool.parameters.parse(args);
}

export async function run(tool: AnyTool, args: unknown, ctx: ToolContext = toolContext()): Promise<unknown> {
  return tool.execute(parseArgs(tool, args), ctx);
}

export async function previewOf(
  tool: AnyTool,
  args: unknown,
  ctx: ToolContext = toolContext(),
): Promise<string> {
  if (!tool.preview) throw new Error(`${tool.name} has no preview`);
  return tool.preview(parseArgs(tool, args), ctx);
}

/** A result that must be text (http_get, the runbook tools). */
export function text(value: unknown): string {
  if (typeof value !== 'string') throw new Error(`expected a string result, got ${typeof value}`);
  return value;
}
