import { DEFAULT_PARALLEL_AGENTS } from './delegate.js';
import { errorResult } from './observation.js';
import type { PreparedCall } from './prepare.js';
import type { RunLimits } from './run-limits.js';

/**
 * Bounds a flood of calls in one reply: calls past `maxToolCallsPerReply`, gated calls past
 * `maxGatedCallsPerPause` and sub-agent calls past `maxParallelAgents` are neither run, put to a person
 * nor handed to a sub-agent. Each still gets its own result, so
 * every call id keeps exactly one answer.
 */
export function capCalls(prepared: readonly PreparedCall[], limits: RunLimits): PreparedCall[] {
  let gatedSeen = 0;
  let delegatedSeen = 0;
  const maxAgents = limits.maxParallelAgents ?? DEFAULT_PARALLEL_AGENTS;
  return prepared.map((p, i): PreparedCall => {
    if (i >= limits.maxToolCallsPerReply) {
      return refused(
        p,
        `Not executed: at most ${limits.maxToolCallsPerReply} tool calls per reply; this was call ${i + 1}. Send fewer calls.`,
      );
    }
    if (p.kind === 'delegated' && ++delegatedSeen > maxAgents) {
      return refused(
        p,
        `Not delegated: at most ${maxAgents} sub-agent calls per reply; this was sub-agent call ${delegatedSeen}. Ask the rest once these have answered.`,
      );
    }
    if (p.kind !== 'gated') return p;
    gatedSeen++;
    if (gatedSeen <= limits.maxGatedCallsPerPause) return p;
    return refused(
      p,
      `Not executed: at most ${limits.maxGatedCallsPerPause} calls needing approval per reply; this was approval call ${gatedSeen}. Send the rest once these are decided.`,
    );
  });
}

function refused(p: PreparedCall, message: string): PreparedCall {
  return {
    kind: 'error',
    call: p.call,
    signature: p.signature,
    result: errorResult('too_many_calls', message),
  };
}
