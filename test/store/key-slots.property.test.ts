/**
 * Properties of the key scheme that make the store work on a Redis Cluster, checked with Redis's own
 * rule for hash tags (a cluster hashes only what lies between a key's first `{` and the next `}`, when
 * that is not empty; else the whole key): whatever the prefix, run id, tool call id, round and Slack
 * ids, every key of a run has its run's tag, every key of a thread its thread's, and the cross-run keys
 * no tag at all (so each is hashed whole).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { approvalIdFor, keyScheme } from '../../src/store/index.js';

/** The part of `key` Redis Cluster hashes. */
function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

const word = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
const runId = word.filter((id) => !/^\d+$/.test(id));
const slackId = fc.stringMatching(/^[A-Za-z0-9_.-]{1,20}$/);
const prefix = fc.oneof(
  word.map((w) => `{${w}}`),
  fc.tuple(word, word).map(([a, b]) => `${a}{${b}}`),
  word,
);

describe('the key scheme on a Redis Cluster', () => {
  it("puts every key of a run, its approvals and their ledger entries in the run's slot", () => {
    fc.assert(
      fc.property(
        prefix,
        runId,
        fc.string({ minLength: 1 }),
        fc.integer({ min: 1, max: 999 }),
        (p, id, call, round) => {
          const keys = keyScheme(p);
          const run = keys.run(id);
          const approvalId = approvalIdFor(id, call, round);
          const all = [
            run.header,
            run.messages,
            run.evidence,
            run.trace,
            run.lease,
            run.approvals,
            keys.approval(approvalId),
            keys.ledger(approvalId),
          ];
          expect(new Set(all.map(hashedPart))).toEqual(new Set([id]));
        },
      ),
    );
  });

  it("puts every key of a thread in the thread's slot, and gives the cross-run keys no tag", () => {
    fc.assert(
      fc.property(
        prefix,
        slackId,
        slackId,
        slackId,
        fc.integer({ min: 0 }),
        (p, team, channel, ts, window) => {
          const keys = keyScheme(p);
          const thread = keys.thread(team, channel, ts);
          expect(new Set([thread.history, thread.active, thread.inbox].map(hashedPart))).toEqual(
            new Set([`${team}-${channel}-${ts}`]),
          );
          for (const key of [
            keys.channelIndex(team, channel),
            keys.userIndex(team, channel),
            keys.pendingApprovals,
            keys.audit,
            keys.rate('user', [team, channel], window),
            keys.rate('thread', [team, channel, ts], window),
          ]) {
            expect(hashedPart(key)).toBe(key);
          }
        },
      ),
    );
  });
});
