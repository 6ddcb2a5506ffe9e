/**
 * The reference ("oracle") model: it plays a task's `oracle` steps (or, in a sub-agent's run, the steps
 * of `agentOracles.<agent>`), choosing the step by how many replies the conversation already holds, so it
 * needs no memory of its own and answers the same through the in-process port or a fake
 * OpenAI-compatible server. It shows that a task can be solved with the real tools, policy and approver,
 * and drives the tests of the graders.
 *
 * A compaction replaces earlier replies by a summary, which the oracle writes itself when asked: the
 * summary carries the count of replies it stands for (`[oracle: N replies summarised]`), so the step
 * after a compaction is the same as without one.
 */

import { isSummaryRequest } from '../loop/compaction.js';
import { ModelError } from '../loop/errors.js';
import type { ModelPort, ModelReply } from '../loop/model-port.js';
import { fillPlaceholders } from './merge.js';
import type { OracleStep } from './task-schema.js';

export const ORACLE_MODEL = 'oracle';

const MARK = /\[oracle: (\d+) replies summarised\]/;

/** A message as both the engine and the OpenAI wire format have it. */
interface AnyMessage {
  role: string;
  content?: unknown;
}

const textOf = (m: AnyMessage) => (typeof m.content === 'string' ? m.content : '');

/** Replies a message stands for: a summary the oracle wrote counts the replies it replaced. */
function repliesIn(m: AnyMessage): number {
  if (m.role !== 'assistant') return 0;
  const mark = MARK.exec(textOf(m));
  return mark ? Number(mark[1]) : 1;
}

/** The step for a conversation: the first step once, the second after one reply, and so on. */
export function oracleStepFor(
  steps: readonly OracleStep[],
  messages: readonly AnyMessage[],
): { index: number; step: OracleStep | undefined } {
  const index = messages.reduce((n, m) => n + repliesIn(m), 0);
  return { index, step: steps[index] };
}

/**
 * The oracle's summary for a compaction's summary call: the replies of the earlier summary (when the
 * request carries one) plus those of the part to summarise (its `[me]` lines), and the part's calls.
 */
export function oracleSummary(messages: readonly AnyMessage[]): string {
  const text = messages
    .filter((m) => m.role === 'user')
    .map(textOf)
    .join('\n');
  const at = text.indexOf('The part to summarise:\n');
  const before = at < 0 ? text : text.slice(0, at);
  const part = at < 0 ? '' : text.slice(at);
  const earlier = Number(MARK.exec(before)?.[1] ?? 0);
  const lines = part.split('\n');
  const replies = lines.filter((l) => l.startsWith('[me] ')).length;
  const calls = lines.filter((l) => l.startsWith('  -> ')).map((l) => l.trim().slice(3));
  return `[oracle: ${earlier + replies} replies summarised] I made these calls: ${calls.join('; ') || 'none in this part'}.`;
}

/** `${WORLD}` and the like filled in the steps' arguments and texts. */
export function oracleModel(
  steps: readonly OracleStep[],
  placeholders: Readonly<Record<string, string>>,
  name = ORACLE_MODEL,
): ModelPort {
  const filled = fillPlaceholders(steps, placeholders);
  return {
    model: name,
    async complete(request): Promise<ModelReply> {
      if (isSummaryRequest(request.messages)) {
        return { content: oracleSummary(request.messages), toolCalls: [], model: name, finishReason: 'stop' };
      }
      const { index, step } = oracleStepFor(filled, request.messages);
      if (!step) {
        throw new ModelError(`the oracle has no step ${index + 1} (it has ${filled.length})`, {
          retryable: false,
        });
      }
      if ('answer' in step) return { content: step.answer, toolCalls: [], model: name, finishReason: 'stop' };
      return {
        content: step.text ?? null,
        toolCalls: step.calls.map((c, i) => ({
          id: `o${index}_${i}`,
          name: c.tool,
          arguments: JSON.stringify(c.args),
        })),
        model: name,
        finishReason: 'tool_calls',
      };
    },
  };
}
