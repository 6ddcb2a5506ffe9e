import type { z } from 'zod';
import { argsBoundsProblem } from './args-bounds.js';
import { delegationRefusal } from './delegate.js';
import { argsHash, callSignature } from './hash.js';
import type { ToolCall } from './messages.js';
import { errorResult } from './observation.js';
import type { RunState } from './run-state.js';
import { tooLongToShow } from './shown-arguments.js';
import type { AnyTool } from './tool-contract.js';
import type { ToolResult } from './tool-result.js';

/** Why a tool the run is not offered was withheld from it (EngineDeps.withheld), or null: unknown tool. */
type Withheld = (tool: string) => { code: string; message: string } | null;

export type PreparedCall =
  | { kind: 'error'; call: ToolCall; signature: string; result: ToolResult }
  | { kind: 'read'; call: ToolCall; signature: string; tool: AnyTool; args: unknown }
  | { kind: 'delegated'; call: ToolCall; signature: string; tool: AnyTool; args: unknown }
  | { kind: 'gated'; call: ToolCall; signature: string; tool: AnyTool; args: unknown; hash: string };

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 10)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

/** An `invalid_arguments` result keyed by the raw text, whose hash is safe whatever its shape. */
function invalidArguments(call: ToolCall, problem: string): PreparedCall {
  return {
    kind: 'error',
    call,
    signature: callSignature(call.name, argsHash(call.arguments)),
    result: errorResult('invalid_arguments', `The arguments of ${call.name} were refused: ${problem}`),
  };
}

/**
 * Turns a raw call from the model into something the engine can act on, or into an error result the
 * model can read and correct: unknown tool, malformed JSON, arguments too large or too deeply nested,
 * arguments failing the schema, a gated call identical to one a person already rejected in this run, or
 * one too long to show an approver in full. Never throws: a throw while preparing (a schema's own code,
 * say) is an argument error too, so a turn already checkpointed cannot fail the same way on every retry.
 */
export function prepareCall(
  call: ToolCall,
  tools: ReadonlyMap<string, AnyTool>,
  state: RunState,
  withheld?: Withheld,
): PreparedCall {
  try {
    const refused = tools.has(call.name) ? null : (withheld?.(call.name) ?? null);
    if (refused) {
      return {
        kind: 'error',
        call,
        signature: callSignature(call.name, argsHash(call.arguments)),
        result: errorResult(refused.code, refused.message),
      };
    }
    return prepareUnguarded(call, tools, state);
  } catch (err) {
    return invalidArguments(
      call,
      `they could not be checked (${err instanceof Error ? err.message : String(err)}).`,
    );
  }
}

function prepareUnguarded(
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
  const outOfBounds = argsBoundsProblem(call.arguments);
  if (outOfBounds) return invalidArguments(call, outOfBounds);
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
  if (tool.delegate) {
    const refusal = delegationRefusal(tool, state);
    if (refusal) return { kind: 'error', call, signature, result: refusal };
    return { kind: 'delegated', call, signature, tool, args: parsed.data };
  }
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
