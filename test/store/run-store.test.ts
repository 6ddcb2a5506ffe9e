import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunStateVersionError } from '../../src/loop/errors.js';
import { renderResult, summarise } from '../../src/loop/observation.js';
import type { RunState } from '../../src/loop/run-state.js';
import { approvalIdFor, StoreError } from '../../src/store/index.js';
import { changingJson } from '../../src/store/runs/header-codec.js';
import { killConnections, type StoreFixture, storeFixture } from './redis-fixture.js';
import { advance, newState, realisticState, slack, T0 } from './run-state-fixture.js';

let fx: StoreFixture;
beforeEach(() => {
  fx = storeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

async function started(state: RunState) {
  const { runs, leases } = fx.store;
  const { persisted } = (await runs.createRun(state, slack)).run;
  const lease = await leases.acquire(state.runId, 'worker-a', 30_000);
  if (!lease.acquired) throw new Error('lease not acquired');
  return { fence: lease.fence, persisted };
}

describe('RunStore round trip', () => {
  it('loads exactly the RunState that was created', async () => {
    const state = realisticState('run-roundtrip');
    await fx.store.runs.createRun(state, slack);
    const loaded = await fx.store.runs.loadRun('run-roundtrip');
    expect(loaded?.state).toStrictEqual(state);
    expect(loaded?.slack).toStrictEqual(slack);
    expect(loaded?.persisted).toEqual({ messages: 6, evidence: 2 });
    expect(loaded?.fence).toBe(0);
    expect(loaded?.cancelRequest).toBeNull();
  });

  it('loads exactly the RunState saved by saveStep, with the placeholder', async () => {
    const first = newState('run-steps');
    const { fence, persisted } = await started(first);
    const next: RunState = {
      ...realisticState('run-steps'),
      evidence: [...realisticState('run-steps').evidence],
    };
    await fx.store.runs.saveStep({ runId: 'run-steps', fence, state: next, persisted });
    await fx.store.runs.setPlaceholder('run-steps', '1767000001.000200');
    const loaded = await fx.store.runs.loadRun('run-steps');
    expect(loaded?.state).toStrictEqual(next);
    expect(loaded?.slack).toStrictEqual({ ...slack, placeholderTs: '1767000001.000200' });
    expect(loaded?.persisted).toEqual({ messages: next.messages.length, evidence: next.evidence.length });
  });

  it("reads the run's recorded trace context with it (null before one is recorded)", async () => {
    await fx.store.runs.createRun(newState('run-traced'), slack);
    expect((await fx.store.runs.loadRun('run-traced'))?.traceParent).toBeNull();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await fx.store.runs.setTraceParent('run-traced', traceparent);
    expect((await fx.store.runs.loadRun('run-traced'))?.traceParent).toBe(traceparent);
    expect(await fx.store.runs.traceParent('run-traced')).toBe(traceparent);
  });

  it('returns null for a run that does not exist', async () => {
    expect(await fx.store.runs.loadRun('nope')).toBeNull();
  });

  it('creates a run once: a second createRun (redelivered start job) changes nothing', async () => {
    const state = newState('run-once');
    expect((await fx.store.runs.createRun(state, slack)).created).toBe(true);
    const other = { ...state, messages: [...state.messages, { role: 'user' as const, content: 'again' }] };
    const again = await fx.store.runs.createRun(other, slack);
    expect(again.created).toBe(false);
    expect(again.run.state).toStrictEqual(state);
    expect((await fx.store.runs.loadRun('run-once'))?.state).toStrictEqual(state);
  });

  it('refuses a stored run of another version', async () => {
    await fx.store.runs.createRun(newState('run-v2'), slack);
    await fx.redis.hset(fx.store.context.keys.run('run-v2').header, 'v', '2');
    await expect(fx.store.runs.loadRun('run-v2')).rejects.toBeInstanceOf(RunStateVersionError);
  });

  it('refuses a header with a field this version does not know', async () => {
    const state = newState('run-extra');
    await fx.store.runs.createRun(state, slack);
    await fx.redis.hset(
      fx.store.context.keys.run('run-extra').header,
      'progress',
      JSON.stringify({ ...JSON.parse(changingJson(state)), surprise: true }),
    );
    await expect(fx.store.runs.loadRun('run-extra')).rejects.toMatchObject({ code: 'corrupt_record' });
  });

  it('refuses a damaged message', async () => {
    await fx.store.runs.createRun(newState('run-bad-msg'), slack);
    await fx.redis.lset(
      fx.store.context.keys.run('run-bad-msg').messages,
      1,
      '{"role":"robot","content":"x"}',
    );
    await expect(fx.store.runs.loadRun('run-bad-msg')).rejects.toMatchObject({ code: 'corrupt_record' });
  });

  it('refuses a run stored in another layout', async () => {
    await fx.store.runs.createRun(newState('run-layout'), slack);
    await fx.redis.hset(fx.store.context.keys.run('run-layout').header, 'layout', '1');
    await expect(fx.store.runs.loadRun('run-layout')).rejects.toMatchObject({ code: 'corrupt_record' });
  });

  it('keeps a result its tool message gives back as a pointer to it, and loads it back whole', async () => {
    const first = newState('run-evidence');
    const { fence, persisted } = await started(first);
    const result = { ok: true as const, data: { job: 'payments', instance: '10.0.0.7:9100', up: 1 } };
    const next: RunState = {
      ...advance(first, 1),
      evidence: [
        {
          toolCallId: 'call_s1',
          tool: 'prometheus_query',
          kind: 'result',
          ok: true,
          summary: summarise(result),
          at: T0 + 5,
        },
      ],
    };
    const toolMessage = next.messages[3];
    if (toolMessage?.role !== 'tool') throw new Error('fixture changed');
    next.messages[3] = { ...toolMessage, content: renderResult(result) };
    await fx.store.runs.saveStep({ runId: 'run-evidence', fence, state: next, persisted });
    const stored = await fx.redis.lrange(fx.store.context.keys.run('run-evidence').evidence, 0, -1);
    expect(JSON.parse(stored[0]!)).toEqual([3, 5]);
    expect((await fx.store.runs.loadRun('run-evidence'))?.state).toStrictEqual(next);
  });

  it('writes the fixed part of the header once; a step rewrites only the changing part', async () => {
    const state = newState('run-split');
    const { fence, persisted } = await started(state);
    const key = fx.store.context.keys.run('run-split').header;
    const fixedBefore = await fx.redis.hget(key, 'state');
    await fx.store.runs.saveStep({ runId: 'run-split', fence, state: advance(state, 1), persisted });
    expect(await fx.redis.hget(key, 'state')).toBe(fixedBefore);
    expect(JSON.parse(fixedBefore ?? '')).toStrictEqual({
      requester: state.requester,
      question: state.question,
      limits: state.limits,
    });
    expect(Object.keys(JSON.parse((await fx.redis.hget(key, 'progress')) ?? '')).sort()).toEqual(
      ['actions', 'answer', 'answerRetries', 'brakes', 'rejected', 'stopMessage', 'turn', 'usage'].sort(),
    );
  });
});

describe('saveStep', () => {
  it('appends only the new messages and never rewrites stored ones', async () => {
    const state = newState('run-append');
    const { fence, persisted } = await started(state);
    const keys = fx.store.context.keys.run('run-append');
    const after1 = advance(state, 1);
    const saved1 = await fx.store.runs.saveStep({ runId: 'run-append', fence, state: after1, persisted });
    expect(saved1.persisted).toEqual({ messages: 4, evidence: 0 });

    // The engine never edits history; if a caller did, the store would not rewrite what is stored.
    const edited = advance(after1, 1);
    edited.messages[0] = { role: 'system', content: 'EDITED' };
    const saved2 = await fx.store.runs.saveStep({
      runId: 'run-append',
      fence,
      state: edited,
      persisted: saved1.persisted,
    });
    expect(saved2.persisted.messages).toBe(6);
    const stored = (await fx.redis.lrange(keys.messages, 0, -1)).map((m) => JSON.parse(m));
    expect(stored).toHaveLength(6);
    expect(stored[0]).toEqual(state.messages[0]);
    expect(stored.slice(2)).toEqual(edited.messages.slice(2));
  });

  it('refuses a stale fence after another worker took the lease', async () => {
    const state = newState('run-stale');
    const { fence, persisted } = await started(state);
    await fx.store.leases.release('run-stale', fence);
    const other = await fx.store.leases.acquire('run-stale', 'worker-b', 30_000);
    expect(other).toMatchObject({ acquired: true, fence: fence + 1 });
    const attempt = fx.store.runs.saveStep({
      runId: 'run-stale',
      fence,
      state: advance(state, 1),
      persisted,
    });
    await expect(attempt).rejects.toBeInstanceOf(StoreError);
    await expect(attempt).rejects.toMatchObject({ code: 'stale_fence' });
    expect(await fx.redis.llen(fx.store.context.keys.run('run-stale').messages)).toBe(2);
  });

  it('refuses a write after the lease expired (lease_lost)', async () => {
    const state = newState('run-lost');
    await fx.store.runs.createRun(state, slack);
    const lease = await fx.store.leases.acquire('run-lost', 'worker-a', 30);
    if (!lease.acquired) throw new Error('not acquired');
    await new Promise((r) => setTimeout(r, 80));
    await expect(
      fx.store.runs.saveStep({
        runId: 'run-lost',
        fence: lease.fence,
        state: advance(state, 1),
        persisted: { messages: 2, evidence: 0 },
      }),
    ).rejects.toMatchObject({ code: 'lease_lost' });
  });

  it('refuses a count mismatch (the caller missed a step)', async () => {
    const state = newState('run-count');
    const { fence, persisted } = await started(state);
    const after1 = advance(state, 1);
    await fx.store.runs.saveStep({ runId: 'run-count', fence, state: after1, persisted });
    // Same base again: the caller does not know step 1 was stored.
    await expect(
      fx.store.runs.saveStep({ runId: 'run-count', fence, state: advance(after1, 1), persisted }),
    ).rejects.toMatchObject({ code: 'count_mismatch' });
    expect(await fx.redis.llen(fx.store.context.keys.run('run-count').messages)).toBe(4);
  });

  it('refuses a state whose history shrank', async () => {
    const state = newState('run-shrink');
    const { fence } = await started(state);
    await expect(
      fx.store.runs.saveStep({
        runId: 'run-shrink',
        fence,
        state: { ...state, messages: state.messages.slice(0, 1) },
        persisted: { messages: 2, evidence: 0 },
      }),
    ).rejects.toMatchObject({ code: 'not_append_only' });
  });

  it('fails not_found for a run that does not exist', async () => {
    await expect(
      fx.store.runs.saveStep({
        runId: 'ghost',
        fence: 1,
        state: newState('ghost'),
        persisted: { messages: 2, evidence: 0 },
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('reports a cancel request at the next step boundary', async () => {
    const state = newState('run-cancel');
    const { fence, persisted } = await started(state);
    const saved = await fx.store.runs.saveStep({
      runId: 'run-cancel',
      fence,
      state: advance(state, 1),
      persisted,
    });
    expect(saved.cancelRequested).toBe(false);
    expect(await fx.store.runs.requestCancel('run-cancel', { by: 'U0BOB', at: T0 + 5 })).toBe(true);
    const next = await fx.store.runs.saveStep({
      runId: 'run-cancel',
      fence,
      state: advance(state, 2),
      persisted: saved.persisted,
    });
    expect(next.cancelRequested).toBe(true);
    expect((await fx.store.runs.loadRun('run-cancel'))?.cancelRequest).toEqual({ by: 'U0BOB', at: T0 + 5 });
    expect(await fx.store.runs.requestCancel('ghost', { by: 'U0BOB', at: T0 })).toBe(false);
  });

  it('treats a resent call (same nonce, reply lost) as applied once', async () => {
    const state = newState('run-resend');
    const { fence } = await started(state);
    const keys = fx.store.context.keys.run('run-resend');
    const next = advance(state, 1);
    const args = [fence, 2, 0, 'nonce-1', changingJson(next), 'running', 1, '', T0 + 1, '', 0, keys.base, 50];
    const sent = [
      ...args,
      2,
      0,
      0,
      0,
      ...next.messages.slice(2).map((m) => JSON.stringify(m)),
      '["m",1,1,5]',
    ];
    const keyList = [
      keys.header,
      keys.messages,
      keys.evidence,
      keys.lease,
      keys.trace,
      keys.approvals,
      keys.compactions,
    ];
    expect(await fx.store.context.script('saveStep', keyList, sent)).toEqual([4, 0, 0, 0]);
    expect(await fx.store.context.script('saveStep', keyList, sent)).toEqual([4, 0, 0, 0]);
    expect(await fx.redis.llen(keys.messages)).toBe(4);
    expect(await fx.redis.llen(keys.trace)).toBe(1);
  });
});

describe('trace', () => {
  it('keeps the newest entries up to the cap and refuses a run that is gone', async () => {
    const local = storeFixture({ traceMaxLength: 5 });
    try {
      await local.store.runs.createRun(newState('run-trace'), slack);
      for (let i = 0; i < 3; i++) {
        const entries = [0, 1, 2, 3].map((j) => ({
          type: 'step_started',
          at: T0 + i * 4 + j,
          step: i * 4 + j,
        }));
        expect(await local.store.runs.appendTrace('run-trace', entries)).toBe(true);
      }
      const trace = await local.store.runs.readTrace('run-trace');
      expect(trace.map((e) => e.step)).toEqual([7, 8, 9, 10, 11]);
      expect(await local.store.runs.appendTrace('ghost', [{ type: 'x', at: T0 }])).toBe(false);
      expect(await local.redis.exists(local.store.context.keys.run('ghost').trace)).toBe(0);
    } finally {
      await local.cleanup();
    }
  });
});

describe('trace written with the step', () => {
  const entry = (step: number) => ({ type: 'model_replied', at: T0 + step, step, durationMs: 7 });

  it("appends the step's trace entries in the same script, and none when the save is refused", async () => {
    const state = newState('run-traced');
    const { fence, persisted } = await started(state);
    const saved = await fx.store.runs.saveStep({
      runId: 'run-traced',
      fence,
      state: advance(state, 1),
      persisted,
      trace: [entry(1)],
    });
    expect(await fx.store.runs.readTrace('run-traced')).toStrictEqual([entry(1)]);

    await fx.store.leases.release('run-traced', fence);
    await fx.store.leases.acquire('run-traced', 'worker-b', 30_000);
    await expect(
      fx.store.runs.saveStep({
        runId: 'run-traced',
        fence,
        state: advance(state, 2),
        persisted: saved.persisted,
        trace: [entry(2)],
      }),
    ).rejects.toMatchObject({ code: 'stale_fence' });
    expect(await fx.store.runs.readTrace('run-traced')).toStrictEqual([entry(1)]);
  });

  it('keeps the newest entries up to the cap', async () => {
    const local = storeFixture({ traceMaxLength: 3 });
    try {
      let state = newState('run-capped');
      let { persisted } = (await local.store.runs.createRun(state, slack)).run;
      const lease = await local.store.leases.acquire('run-capped', 'w', 30_000);
      if (!lease.acquired) throw new Error('not acquired');
      for (let step = 1; step <= 4; step++) {
        state = advance(state, 1);
        const trace = [entry(step), { ...entry(step), at: T0 + step + 0.5 }];
        persisted = (
          await local.store.runs.saveStep({
            runId: 'run-capped',
            fence: lease.fence,
            state,
            persisted,
            trace,
          })
        ).persisted;
      }
      expect((await local.store.runs.readTrace('run-capped')).map((e) => e.at)).toEqual([
        T0 + 3.5,
        T0 + 4,
        T0 + 4.5,
      ]);
    } finally {
      await local.cleanup();
    }
  });
});

describe('loading a paused run', () => {
  it("reads the pending calls' approvals and their decisions with the run", async () => {
    const state = realisticState('run-paused');
    const { fence } = await started(state);
    const call = state.turn!.pending[0]!;
    expect((await fx.store.runs.loadRun('run-paused'))?.pauseApprovals).toEqual([]);
    await fx.store.approvals.createApprovals({
      runId: 'run-paused',
      fence,
      requester: 'U0ALICE',
      now: T0,
      approvals: [{ call, approvers: { users: ['U0M'], groups: [] }, expiresAt: T0 + 60_000 }],
    });
    const approvalId = approvalIdFor('run-paused', call.toolCallId);
    expect((await fx.store.runs.loadRun('run-paused'))?.pauseApprovals).toMatchObject([
      { approvalId, status: 'pending' },
    ]);
    await fx.store.approvals.decide({
      approvalId,
      decision: 'rejected',
      decidedBy: 'U0M',
      reason: 'no',
      now: T0 + 1,
    });
    const loaded = await fx.store.runs.loadRun('run-paused');
    expect(loaded?.pauseApprovals).toStrictEqual([await fx.store.approvals.get(approvalId)]);
    expect(loaded?.pauseApprovals[0]).toMatchObject({
      status: 'rejected',
      decidedBy: 'U0M',
      decisionReason: 'no',
    });
  });

  it('reads no approvals once no call is pending', async () => {
    const state = realisticState('run-resumed');
    const { fence, persisted } = await started(state);
    const call = state.turn!.pending[0]!;
    await fx.store.approvals.createApprovals({
      runId: 'run-resumed',
      fence,
      requester: 'U0ALICE',
      now: T0,
      approvals: [{ call, approvers: { users: [], groups: [] }, expiresAt: T0 + 60_000 }],
    });
    const resumed: RunState = {
      ...state,
      status: 'running',
      stopReason: null,
      stopMessage: null,
      turn: null,
    };
    await fx.store.runs.saveStep({ runId: 'run-resumed', fence, state: resumed, persisted });
    expect((await fx.store.runs.loadRun('run-resumed'))?.pauseApprovals).toEqual([]);
  });
});

describe('connection loss', () => {
  it('finishes a run whose store connection is killed repeatedly mid-run (CLIENT KILL)', async () => {
    const runId = 'run-killed';
    let state = newState(runId);
    let { fence, persisted } = await started(state);
    const killer = fx.connect().context.redis as Redis;
    let kills = 0;
    const timer = setInterval(() => {
      killConnections(killer, fx.prefix)
        .then((n) => {
          kills += n;
        })
        .catch(() => {});
    }, 15);
    try {
      for (let step = 0; step < 300; step++) {
        state = advance(state, 1);
        persisted = (await fx.store.runs.saveStep({ runId, fence, state, persisted })).persisted;
      }
    } finally {
      clearInterval(timer);
    }
    expect(kills).toBeGreaterThan(2);
    const loaded = await fx.store.runs.loadRun(runId);
    expect(loaded?.state).toStrictEqual(state);
    fence = loaded?.fence ?? -1;
    expect(fence).toBe(1);
  });
});
