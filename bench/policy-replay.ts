/**
 * Policy replay over a recorded history (issue 27): 1,000 decided calls in the audit log of a real Redis
 * (the store records them as the worker and bot do), replayed under a proposed policy by `replayPolicy`,
 * the function `loopgate policy replay` runs. Goal: under 5 s. Prints figures only; cleans its keys up.
 *
 *   npx tsx bench/policy-replay.ts [decisions]
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { replayPolicy } from '../src/cli/policy-replay.js';
import { parsePolicy } from '../src/config/policy.js';
import type { GatedCall } from '../src/loop/gated-calls.js';
import { approvalIdFor, createStore } from '../src/store/index.js';
import { realisticState, slack } from '../test/store/run-state-fixture.js';

const DECISIONS = Number(process.argv[2] ?? 1_000);
const PER_RUN = 50;

const proposed = parsePolicy(
  `approvals: { approvers: [U0MGR], trusted: [run_action] }
custom: [{ path: ./x.ts, name: run_action }]
rules:
  run_action:
    - { name: staging, when: { params.env: staging }, outcome: allow }
    - { name: prod, when: { params.env: prod }, outcome: ask, quorum: 2, approvers: [S0LEADS] }
`,
  { env: {} },
);

const prefix = `{lgbench-${randomBytes(4).toString('hex')}}`;
const redis = new Redis('redis://127.0.0.1:6379');
const store = createStore(redis, { prefix });
try {
  const seeded = performance.now();
  const since = Date.now() - 1_000;
  for (let r = 0; r * PER_RUN < DECISIONS; r++) {
    const runId = `run-${r}`;
    await store.runs.createRun(realisticState(runId), slack);
    const lease = await store.leases.acquire(runId, 'bench', 60_000);
    if (!lease.acquired) throw new Error('no lease');
    const now = Date.now();
    const calls = Array.from({ length: Math.min(PER_RUN, DECISIONS - r * PER_RUN) }, (_, i): GatedCall => {
      const env = ['staging', 'prod', 'dev'][i % 3];
      return {
        toolCallId: `c${i}`,
        tool: 'run_action',
        effect: 'write',
        args: { action: 'restart_service', params: { service: `svc${i}`, env } },
        argsHash: `${r}-${i}`.padEnd(64, '0'),
        idempotent: false,
      };
    });
    await store.approvals.createApprovals({
      runId,
      fence: lease.fence,
      requester: 'U0ALICE',
      now,
      approvals: calls.map((call) => ({
        call,
        approvers: { users: ['U0MGR'], groups: [] },
        expiresAt: now + 3_600_000,
      })),
    });
    await Promise.all(
      calls.map((call) =>
        store.approvals.decide({
          approvalId: approvalIdFor(runId, call.toolCallId),
          decision: 'approved',
          decidedBy: 'U0MGR',
          now: Date.now(),
        }),
      ),
    );
  }
  const seedMs = performance.now() - seeded;
  const started = performance.now();
  const report = await replayPolicy(store, proposed, since, Date.now());
  const ms = performance.now() - started;
  console.log(`policy replay: ${DECISIONS} recorded decisions (seeded in ${(seedMs / 1000).toFixed(1)} s)`);
  console.log(
    `  replayed ${report.replayed} in ${(ms / 1000).toFixed(2)} s (${((ms * 1000) / Math.max(1, report.replayed)).toFixed(0)} µs per call); goal < 5 s`,
  );
  console.log(
    `  changed: ${report.changed.length} (${Object.entries(report.counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}); unreplayable ${report.unreplayable.length}`,
  );
} finally {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}
