import { describe, expect, it } from 'vitest';
import { promisesOfUndecidedActions } from '../../src/loop/answer.js';
import type { ActionRecord } from '../../src/loop/gated-calls.js';

const expired: ActionRecord = {
  toolCallId: 'c1',
  tool: 'run_action',
  argsHash: 'h',
  outcome: 'expired',
  summary: 'restart_service payments prod: expired',
};
const flagged = (answer: string, actions: ActionRecord[] = [expired]) =>
  promisesOfUndecidedActions(answer, actions).length > 0;

describe('promisesOfUndecidedActions', () => {
  it('flags an expired action presented as still to come', () => {
    expect(flagged('The restart will run once it is approved.')).toBe(true);
    expect(flagged("I'll run the action later today.")).toBe(true);
    expect(flagged('The restart is pending approval.')).toBe(true);
    expect(flagged('It goes ahead as soon as the lead approves.')).toBe(true);
  });

  it('lets through plain statements that it did not run, and invitations to ask again', () => {
    expect(flagged('Nobody approved the restart before the approval expired, so it did not run.')).toBe(
      false,
    );
    expect(flagged('Ask me again when the lead can approve it.')).toBe(false);
    expect(flagged('Try again once someone is around to approve.')).toBe(false);
  });

  it('says nothing when no action was closed without a decision', () => {
    expect(flagged('The restart will run once approved.', [{ ...expired, outcome: 'succeeded' }])).toBe(
      false,
    );
  });
});
