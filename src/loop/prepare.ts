import type { z } from 'zod';
import { argsHash, callSignature } from './hash.js';
import { errorResult } from './observation.js';
import { tooLongToShow } from './shown-arguments.js';
import type { AnyTool, RunState, ToolCall, ToolResult } from './types.js';

export type PreparedCall =
  | { kind: 'error'; call: ToolCall; signature: string; result: ToolResult }
  | { kind: 'read'; call: ToolCall; signature: string; tool: AnyTool; args: unknown }
  | { kind: 'gated'; call: ToolCall; signature: string; tool: AnyTool; args: unknown; hash: string };

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 10)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

/**
 * Turns a raw call from the model into something the engine can act on, or into an error result the
 * model can read and correct: unknown tool, malformed JSON, arguments failing the schema, a gated call
 * identical to one a person already rejected in this run, or one too long to show an approver in full.
 */
export function prepareCall(
  call: ToolCall,
  tools: ReadonlyMap<string, AnyTool>,
  state: RunState,
): PreparedCall {
  const tool = tools.get(call.name);
  if (!tool) {
    return {
      kind: 'error',
      call,
      signature: callSignature(call.name, argsHash(call.arguments)),
      result: errorResult(
        'unknown_tool',
        `There is no tool named "${call.name}". Available tools: ${[...tools.keys()].join(', ') || 'none'}.`,
      ),
    };
  }
  let raw: unknown;
  try {
    raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return {
      kind: 'error',
      call,
      signature: callSignature(call.name, argsHash(call.arguments)),
      result: errorResult(
        'invalid_json',
        `The arguments of ${call.name} are not valid JSON (${(err as Error).message}). Send one JSON object.`,
      ),
    };
  }
  const parsed = tool.parameters.safeParse(raw);
  if (!parsed.success) {
    return {
      kind: 'error',
      call,
      signature: callSignature(call.name, argsHash(raw)),
      result: errorResult(
        'invalid_arguments',
        `The arguments of ${call.name} do not match its schema: ${formatIssues(parsed.error.issues)}.`,
      ),
    };
  }
  const hash = argsHash(parsed.data);
  const signature = callSignature(call.name, hash);
  if (tool.effect === 'read') return { kind: 'read', call, signature, tool, args: parsed.data };
  const rejection = state.rejected[signature];
  if (rejection) {
    const who = rejection.by ? ` by <@${rejection.by}>` : '';
    const why = rejection.reason ? `: ${rejection.reason}` : '';
    return {
      kind: 'error',
      call,
      signature,
      result: errorResult(
        'rejected_before',
        `Not executed: this exact ${call.name} call was already rejected${who}${why}. It was not asked again. Do not retry it unless the user asks you to.`,
      ),
    };
  }
  const tooLong = tooLongToShow(call.name, parsed.data);
  if (tooLong) return { kind: 'error', call, signature, result: tooLong };
  return { kind: 'gated', call, signature, tool, args: parsed.data, hash };
}
