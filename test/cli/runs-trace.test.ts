import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunState } from '../../src/loop/run-state.js';
import type { SlackContext } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { realisticState, slack, T0 } from '../store/run-state-fixture.js';
import { type CliResult, emptyWorkDir, runCli } from './cli-harness.js';

/** Three runs: two in C0OPS (one by Alice, a finished one by Bob), one by Bob in C0INCIDENTS. */
function finished(runId: string): RunState {
  const s = realisticState(runId);
  return {
    ...s,
    status: 'completed',
    stopReason: 'completed',
    stopMessage: 'Completed.',
    turn: null,
    answer: ['Payments is healthy again.', 'The restart finished at 10:02.'],
    requester: { userId: 'U0BOB', teamId: 'T0TEAM' },
    question: 'Is payments healthy?',
    createdAt: T0 + 2_000,
    updatedAt: T0 + 9_000,
    extensions: [{ round: 1, reason: 'max_steps', added: { steps: 10 }, by: 'U0BOB', at: T0 + 5_000 }],
  };
}

const runs: Array<{ state: RunState; slack: SlackContext }> = [
  { state: realisticState('run-alice'), slack },
  {
    state: {
      ...realisticState('run-bob-inc'),
      requester: { userId: 'U0BOB', teamId: 'T0TEAM' },
      createdAt: T0 + 1_000,
    },
    slack: { ...slack, channelId: 'C0INCIDENTS' },
  },
  { state: finished('run-bob-done'), slack },
];

let fx: StoreFixture;
let env: Record<string, string>;
const work = emptyWorkDir();
const cli = (...args: string[]): Promise<CliResult> => runCli(args, env, work.dir);

beforeAll(async () => {
  fx = storeFixture();
  env = { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: `{${fx.prefix}}` };
  for (const run of runs) await fx.store.runs.createRun(run.state, run.slack);
  // run-alice waits 10 minutes for U0MANAGER or S0SRE to decide its restart.
  const lease = await fx.store.leases.acquire('run-alice', 'worker-a', 30_000);
  if (!lease.acquired) throw new Error('no lease');
  await fx.store.approvals.createApprovals({
    runId: 'run-alice',
    fence: lease.fence,
    requester: 'U0ALICE',
    now: Date.now() - 10 * 60_000,
    approvals: [
      {
        call: {
          toolCallId: 'call_restart',
          tool: 'run_action',
          effect: 'write',
          args: {},
          argsHash: 'a'.repeat(64),
          idempotent: false,
        },
        approvers: { users: ['U0MANAGER'], groups: ['S0SRE'] },
        expiresAt: Date.now() + 3_600_000,
      },
    ],
  });
  await fx.store.leases.release('run-alice', lease.fence);
  await fx.store.runs.appendTrace('run-alice', [
    { type: 'model_replied', runId: 'run-alice', step: 1, toolCalls: 2, durationMs: 1_234, at: T0 + 10 },
    {
      type: 'tool_started',
      runId: 'run-alice',
      toolCallId: 'call_1',
      tool: 'prometheus_query',
      effect: 'read',
      args: {},
      at: T0 + 11,
    },
    {
      type: 'tool_finished',
      runId: 'run-alice',
      toolCallId: 'call_1',
      tool: 'prometheus_query',
      effect: 'read',
      ok: true,
      durationMs: 56,
      at: T0 + 67,
    },
  ]);
});
afterAll(async () => {
  await fx.cleanup();
  work.remove();
});

describe('loopgate runs', () => {
  it('lists the runs of a channel, what needs attention first, with status, steps, cost, age, duration and whom a paused run waits on', async () => {
    const result = await cli('runs', '--team', 'T0TEAM', '--channel', 'C0OPS');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^RUN\s+STATUS\s+STEPS\s+COST\s+AGE\s+DURATION\s+WAITING ON\s+WAITING\s+REQUESTER\s+CHANNEL\s+QUESTION$/,
    );
    // The paused run first, though the finished one is newer.
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['run-alice', 'run-bob-done']);
    expect(lines[1]).toMatch(
      /^run-alice\s+awaiting_approval\s+2\s+\$\d+\.\d{4}\s+\S+( \S+)?\s+\S+( \S+)?\s+U0MANAGER,S0SRE\s+10m 0\ds\s+U0ALICE\s+T0TEAM\/C0OPS\s/,
    );
    // Ended: its duration is creation to end (7 s); it waits on nobody.
    expect(lines[2]).toMatch(
      /^run-bob-done\s+completed\s+2\s+\$\d+\.\d{4}\s+\S+( \S+)?\s+7\.0 s\s+-\s+-\s+U0BOB\s+T0TEAM\/C0OPS\s+Is payments healthy\?$/,
    );
    expect(result.stdout).not.toContain('\u001b[');
  });

  it("lists a requester's runs across channels and honours --limit", async () => {
    const all = await cli('runs', '--team', 'T0TEAM', '--user', 'U0BOB', '--json');
    expect(all.code).toBe(0);
    const rows = JSON.parse(all.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((r) => [r.runId, r.channelId])).toEqual([
      ['run-bob-inc', 'C0INCIDENTS'],
      ['run-bob-done', 'C0OPS'],
    ]);
    expect(rows[1]).toMatchObject({
      status: 'completed',
      stopReason: 'completed',
      step: 2,
      requester: 'U0BOB',
      teamId: 'T0TEAM',
      createdAt: T0 + 2_000,
      durationMs: 7_000,
      waitingOn: [],
      waitingMs: null,
      costUsd: expect.any(Number),
      ageMs: expect.any(Number),
    });
    const one = await cli('runs', '--team', 'T0TEAM', '--user', 'U0BOB', '--limit', '1', '--json');
    expect((JSON.parse(one.stdout) as unknown[]).length).toBe(1);
  });

  it('without a scope lists the runs of every channel under the prefix (and nothing else), longest wait first', async () => {
    const result = await cli('runs', '--json');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const rows = JSON.parse(result.stdout) as Array<{
      runId: string;
      waitingOn: string[];
      waitingMs: number | null;
    }>;
    expect(rows.map((r) => r.runId)).toEqual(['run-alice', 'run-bob-inc', 'run-bob-done']);
    expect(rows[0]?.waitingOn).toEqual(['U0MANAGER', 'S0SRE']);
    expect(rows[0]?.waitingMs).toBeGreaterThanOrEqual(10 * 60_000);
  });

  it('says so when nothing matches', async () => {
    const result = await cli('runs', '--team', 'T0TEAM', '--channel', 'C0EMPTY');
    expect(result).toEqual({ code: 0, stdout: 'No runs found.\n', stderr: '' });
  });

  it('refuses half a scope, two scopes, a bad id and a bad limit with exit 2 and the usage', async () => {
    const cases = [
      ['--channel', 'C0OPS'],
      ['--team', 'T0TEAM'],
      ['--team', 'T0TEAM', '--channel', 'C0OPS', '--user', 'U0BOB'],
      ['--limit', '0'],
      ['--limit', 'ten'],
      ['--team', 'T0TEAM', '--channel', 'C0:{x}'],
    ];
    const results = await Promise.all(cases.map((args) => cli('runs', ...args)));
    results.forEach((result, i) => {
      expect(result.code, cases[i]?.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('Usage: loopgate runs');
    });
  });
});

describe('loopgate trace', () => {
  it('shows the run, each step with tool calls, durations, arguments and results, and that it waits', async () => {
    const result = await cli('trace', 'run-alice');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const out = result.stdout;
    expect(out).toContain('Run run-alice: awaiting_approval');
    expect(out).toContain('requester U0ALICE, channel T0TEAM/C0OPS, thread 1767000000.000100');
    expect(out).toContain('Step 1 (model 1.2 s)');
    expect(out).toMatch(/- prometheus_query \[read\] 56 ms ok\n\s+args:\s+{"query":"rate\(http_errors_total/);
    expect(out).toContain('result: {"ok":true,"data":{"value":0.27}}');
    expect(out).toMatch(/Step 2\n\s+says: The error rate is 27 %/);
    expect(out).toMatch(/- run_action waiting for approval\n\s+args:\s+{"action":"restart_service"/);
    expect(out.trimEnd().endsWith('Waiting for approval.')).toBe(true);
  });

  it('cuts long texts to --max-chars', async () => {
    const result = await cli('trace', 'run-alice', '--max-chars', '10');
    expect(result.stdout).toContain('result: {"ok":true… (+');
  });

  it('prints the final answer of a finished run, and everything as JSON with --json', async () => {
    const text = await cli('trace', 'run-bob-done');
    expect(text.stdout).toContain('Answer:\n  Payments is healthy again.\n  The restart finished at 10:02.');
    expect(text.stdout).toContain(
      `  budget extended (max_steps) by U0BOB at ${new Date(T0 + 5_000).toISOString().replace('T', ' ').slice(0, 19)}`,
    );
    expect(text.stdout).toContain(': 10 more steps');
    const result = await cli('trace', 'run-bob-done', '--json');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as {
      run: Record<string, unknown>;
      steps: Array<{ step: number; calls: Array<{ tool: string }> }>;
      answer: string;
    };
    expect(report.run).toMatchObject({
      runId: 'run-bob-done',
      status: 'completed',
      stopReason: 'completed',
      extensions: [{ round: 1, reason: 'max_steps', added: { steps: 10 }, by: 'U0BOB' }],
    });
    expect(report.steps.map((s) => s.calls.map((c) => c.tool))).toEqual([
      ['prometheus_query', 'http_get'],
      ['run_action'],
    ]);
    expect(report.answer).toBe('Payments is healthy again.\nThe restart finished at 10:02.');
  });

  it('shows each compaction after the step before it, in text and in --json', async () => {
    const state: RunState = {
      ...realisticState('run-compacted'),
      status: 'running',
      stopReason: null,
      stopMessage: null,
      turn: null,
    };
    const { run } = await fx.store.runs.createRun(state, slack);
    const lease = await fx.store.leases.acquire('run-compacted', 'w', 30_000);
    if (!lease.acquired) throw new Error('not acquired');
    const compaction = {
      upTo: 5,
      messages: 5,
      summary: 'I read the error rate (27 %) and the status page (degraded).',
      notes:
        'Recorded by loopgate (its records, not my words):\nNo call that needs approval was made so far.',
      step: 1,
      at: T0 + 20,
      tokensBefore: 90_000,
      tokensAfter: 12_000,
      calls: 1,
      usage: { inputTokens: 80_000, outputTokens: 300 },
      costUsd: 0.0321,
      model: 'gpt-4.1-mini',
    };
    await fx.store.runs.saveStep({
      runId: 'run-compacted',
      fence: lease.fence,
      state: { ...state, compactions: [compaction] },
      persisted: run.persisted,
      trace: [{ type: 'context_compacted', at: T0 + 20, upTo: 5, durationMs: 2_500 }],
    });
    const text = await cli('trace', 'run-compacted');
    expect(text.stdout).toMatch(
      /Step 1\n[\s\S]*\n {2}\[Context compacted: 4 earlier messages replaced by a summary of 60 characters \(300 tokens\); next request about 90000 -> 12000 tokens; 1 model call \(gpt-4\.1-mini\), \$0\.0321; 2\.5 s\]\nStep 2\n/,
    );
    const json = JSON.parse((await cli('trace', 'run-compacted', '--json')).stdout) as {
      compactions: Array<Record<string, unknown>>;
    };
    expect(json.compactions).toEqual([
      expect.objectContaining({ afterStep: 1, messagesReplaced: 4, tokensBefore: 90_000, durationMs: 2_500 }),
    ]);
  });

  it('exits 1 for a run that does not exist and 2 for something that is not a run id', async () => {
    const missing = await cli('trace', 'run-nobody');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no run run-nobody');
    const bad = await cli('trace', 'not:an:id');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not a run id');
    const none = await cli('trace');
    expect(none.code).toBe(2);
  });
});
