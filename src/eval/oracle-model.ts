/**
 * The reference ("oracle") model: it plays a task's `oracle` steps, choosing the step by how many
 * assistant messages the conversation already holds, so it needs no memory of its own and answers the
 * same through the in-process port or a fake OpenAI-compatible server. It shows that a task can be solved
 * with the real tools, policy and approver, and drives the tests of the graders.
 */
import { ModelError } from '../loop/errors.js';
import type { ModelPort, ModelReply } from '../loop/types.js';
import { fillPlaceholders } from './merge.js';
import type { OracleStep } from './task-schema.js';

export const ORACLE_MODEL = 'oracle';

/** The step for a conversation: the first step once, the second after one assistant message, and so on. */
export function oracleStepFor(
  steps: readonly OracleStep[],
  messages: readonly { role: string }[],
): { index: number; step: OracleStep | undefined } {
  const index = messages.filter((m) => m.role === 'assistant').length;
  return { index, step: steps[index] };
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
