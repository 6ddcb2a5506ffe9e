import { createHash } from 'node:crypto';

/**
 * Identifiers that end up inside Redis keys and BullMQ job ids. They may contain neither ':' (BullMQ
 * refuses such job ids) nor braces (they would change a key's hash tag), and never consist of digits
 * only (BullMQ reserves those for its own ids).
 *
 * - run id: `[A-Za-z0-9_-]{1,100}`, not all digits. Chosen by the caller; `runIdForEvent` derives one
 *   from a Slack event id so a redelivered start job finds the run it already created.
 * - approval id: `<runId>.<16 hex>` or `<runId>.<16 hex>.<round>`; the part before the first '.' is the
 *   run id, so every approval key can carry its run's hash tag.
 */
const RUN_ID = /^(?!\d+$)[A-Za-z0-9_-]{1,100}$/;
const APPROVAL_ID = /^([A-Za-z0-9_-]{1,100})\.[0-9a-f]{16}(?:\.[1-9]\d{0,5})?$/;

export const isRunId = (value: string): boolean => RUN_ID.test(value);
export const isApprovalId = (value: string): boolean => APPROVAL_ID.test(value) && isRunId(runIdOf(value));

/** The run id of a Slack event: readable when the event id is plain, a digest otherwise. */
export function runIdForEvent(eventId: string): string {
  const plain = `r-${eventId}`;
  return RUN_ID.test(plain) && plain.length <= 100 ? plain : `r-h${digest(eventId, 32)}`;
}

/**
 * The approval id of a gated call. Deterministic, so writing the approvals of a pause twice (a
 * redelivered job) writes the same records. `round` > 1 asks again for a call whose earlier approval
 * ended without an execution result (e.g. `outcome_unknown`).
 */
export function approvalIdFor(runId: string, toolCallId: string, round = 1): string {
  if (!isRunId(runId)) throw new TypeError(`not a valid run id: ${JSON.stringify(runId)}`);
  if (!Number.isInteger(round) || round < 1 || round > 999_999) throw new RangeError(`bad round ${round}`);
  const base = `${runId}.${digest(toolCallId, 16)}`;
  return round === 1 ? base : `${base}.${round}`;
}

/** The round of an approval id: 1, or the number after its second '.'. */
export function roundOf(approvalId: string): number {
  const parts = approvalId.split('.');
  return parts.length === 3 ? Number(parts[2]) : 1;
}

/** The approval id of the next round of the same call (asked again after an unknown outcome). */
export function nextRoundOf(approvalId: string): string {
  const [runId, call] = approvalId.split('.');
  const next = roundOf(approvalId) + 1;
  if (next > 999_999) throw new RangeError(`bad round ${next}`);
  return `${runId}.${call}.${next}`;
}

/** The run an approval belongs to. */
export function runIdOf(approvalId: string): string {
  const dot = approvalId.indexOf('.');
  return dot === -1 ? approvalId : approvalId.slice(0, dot);
}

function digest(value: string, hexChars: number): string {
  return createHash('sha256').update(value).digest('hex').slice(0, hexChars);
}
