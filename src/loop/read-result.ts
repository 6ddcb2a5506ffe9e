/**
 * `read_result`: the read tool the engine offers in every run whose long results are kept (a
 * `ResultStore` is given and the run's limits keep results), so the tool list stays the same all run
 * long (a list that changed mid-run would also void the provider's prompt cache).
 */
import { z } from 'zod';
import { defineTool } from './define-tool.js';
import { ToolFailure } from './errors.js';
import {
  DEFAULT_PAGE_LINES,
  handleProblem,
  type Kept,
  keepText,
  readPage,
  resultHandle,
  WRAP_CHARS,
} from './large-results.js';
import type { EngineDeps, ResultStore } from './ports.js';
import { NO_RETRY } from './retry.js';
import type { RunState } from './run-state.js';
import type { AnyTool } from './tool-contract.js';

export const READ_RESULT = 'read_result';

const parameters = z.strictObject({
  handle: z.string().min(1).max(200).describe('The handle given in a truncated result (res_…).'),
  offset: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('First line to read, 1-based (default 1). With grep: the line where the search starts.'),
  lines: z
    .number()
    .int()
    .min(1)
    .max(5_000)
    .optional()
    .describe(
      `How many lines to return (default ${DEFAULT_PAGE_LINES}); with grep, how many matching lines.`,
    ),
  grep: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('Only lines containing this text (plain text, any case), each with its line number.'),
});

/** The tool for one run's results; pages hold at most `pageChars` characters. */
function readResultTool(store: ResultStore, pageChars: number): AnyTool {
  return defineTool({
    name: READ_RESULT,
    description: `Reads a tool result that was too long to show whole, by the handle its truncated version gives. Returns numbered pages of lines (offset, lines), or with grep only the lines containing a text. Lines longer than ${WRAP_CHARS} characters count as several lines.`,
    effect: 'read',
    parameters,
    // A lookup in the run's store: nothing a wait would mend.
    retry: NO_RETRY,
    async execute(args, ctx) {
      const problem = handleProblem(args.handle, ctx.runId);
      if (problem) throw new ToolFailure('unknown_handle', problem);
      const text = await store.read(args.handle);
      if (text === null) {
        throw new ToolFailure(
          'unknown_handle',
          `No kept result has the handle ${args.handle} in this run (a mistyped handle, or the run's results have expired).`,
        );
      }
      const page = readPage(text, args.handle, args, pageChars);
      if (!page.ok) throw new ToolFailure('invalid_arguments', page.problem);
      return page.page;
    },
  });
}

interface Merged {
  store: ResultStore;
  pageChars: number;
  tools: ReadonlyMap<string, AnyTool>;
}

// One merged registry per (registry, store): the tool schemas are computed once per registry.
const merged = new WeakMap<ReadonlyMap<string, AnyTool>, Merged>();

/** Whether the run keeps long results: a store is given and its limits keep some. */
function keepsResults(state: RunState, deps: Pick<EngineDeps, 'results'>): boolean {
  return deps.results !== undefined && (state.limits.context?.maxStoredResultBytes ?? 0) > 0;
}

/**
 * The tools the model is offered in this run: the registry, plus `read_result` when results are kept
 * (and there is a tool whose result could be long).
 */
export function runTools(
  state: RunState,
  deps: Pick<EngineDeps, 'tools' | 'results'>,
): ReadonlyMap<string, AnyTool> {
  if (!keepsResults(state, deps) || deps.tools.size === 0 || deps.tools.has(READ_RESULT)) return deps.tools;
  const store = deps.results!;
  const pageChars = state.limits.maxObservationChars;
  const known = merged.get(deps.tools);
  if (known && known.store === store && known.pageChars === pageChars) return known.tools;
  const tools = new Map(deps.tools);
  tools.set(READ_RESULT, readResultTool(store, pageChars));
  merged.set(deps.tools, { store, pageChars, tools });
  return tools;
}

/**
 * The `keep` of a call's execution limits (execute.ts): keeps a long result of call `toolCallId` under
 * its handle, when the run keeps results; else nothing to spread.
 */
export function keeperFor(
  state: RunState,
  deps: Pick<EngineDeps, 'results'>,
  toolCallId: string,
): { keep?: (text: string) => Promise<Kept> } {
  if (!keepsResults(state, deps)) return {};
  const store = deps.results!;
  const limits = state.limits.context!;
  const handle = resultHandle(state.runId, toolCallId);
  return { keep: (text) => keepText(store, handle, text, limits) };
}
