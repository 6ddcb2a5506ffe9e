import type { Message } from '../../loop/messages.js';
import type { Evidence } from '../../loop/run-state.js';
import { fromRow, type RowShape, toRow } from '../rows.js';
import { summaryFromContent } from './evidence-summary.js';
import { evidenceSchema } from './run-state-schema.js';

/**
 * Evidence list elements (keys.ts) take one of two forms:
 * - `[messageIndex, at - createdAt]` for a successful result whose tool message (at that index in the
 *   run's messages) gives back everything else: toolCallId and tool from the message, kind `result`,
 *   ok, and the summary read off the message's text (evidence-summary.ts);
 * - `[toolCallId, tool, kind, ok, summary, at]` for any other record.
 */
const evidenceRow: RowShape<Evidence> = {
  fields: ['toolCallId', 'tool', 'kind', 'ok', 'summary', 'at'],
  schema: evidenceSchema,
};

/** Index of the tool message that gives back `evidence` whole, among messages from `from` on; -1 if none. */
function sourceOf(evidence: Evidence, messages: readonly Message[], from: number): number {
  if (evidence.kind !== 'result' || !evidence.ok) return -1;
  for (let i = messages.length - 1; i >= from; i--) {
    const message = messages[i];
    if (message?.role === 'tool' && message.toolCallId === evidence.toolCallId) {
      const whole =
        message.name === evidence.tool &&
        summaryFromContent(message.content, evidence.summary) === evidence.summary;
      return whole ? i : -1;
    }
  }
  return -1;
}

/**
 * One evidence record as its list element. Its tool message is looked for among `messages` from
 * index `from` on (the messages stored with it), so a step's cost does not grow with the history.
 * `createdAt` is the run's. A record with a field Evidence does not have is refused here, before
 * anything is written, rather than stored and then refused by every load.
 */
export function encodeEvidence(
  evidence: Evidence,
  messages: readonly Message[],
  from: number,
  createdAt: number,
): string {
  const row = toRow(evidenceRow, evidence);
  if (row === null) {
    throw new TypeError(`evidence of ${evidence.toolCallId} has fields Evidence does not have`);
  }
  const source = sourceOf(evidence, messages, from);
  const offset = evidence.at - createdAt;
  if (source >= 0 && offset + createdAt === evidence.at) return JSON.stringify([source, offset]);
  return JSON.stringify(row);
}

/** Evidence records from their parsed list elements, the run's messages and createdAt; throws on a damaged one. */
export function decodeEvidence(
  elements: readonly unknown[],
  messages: readonly Message[],
  createdAt: number,
): Evidence[] {
  return elements.map((element) => {
    if (!Array.isArray(element)) throw new TypeError('an evidence element that is not a row');
    if (element.length !== 2) return fromRow(evidenceRow, element);
    const [source, offset] = element;
    const message = typeof source === 'number' ? messages[source] : undefined;
    const summary = message?.role === 'tool' ? summaryFromContent(message.content) : null;
    if (
      message?.role !== 'tool' ||
      summary === null ||
      typeof offset !== 'number' ||
      !Number.isFinite(offset)
    ) {
      throw new TypeError(`evidence row ${JSON.stringify(element)} points to no result message`);
    }
    // Built from a validated message and checked values: valid Evidence without another schema pass.
    return {
      toolCallId: message.toolCallId,
      tool: message.name,
      kind: 'result',
      ok: true,
      summary,
      at: createdAt + offset,
    };
  });
}
