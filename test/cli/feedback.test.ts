/** `loopgate feedback --since` (the real CLI process) and the feedback section of `loopgate trace`. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { realisticState, slack } from '../store/run-state-fixture.js';
import { type CliResult, emptyWorkDir, runCli } from './cli-harness.js';

let fx: StoreFixture;
let env: Record<string, string>;
const work = emptyWorkDir();
const cli = (...args: string[]): Promise<CliResult> => runCli(args, env, work.dir);
const DAY = 86_400_000;
const now = Date.now();

beforeAll(async () => {
  fx = storeFixture();
  env = { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: `{${fx.prefix}}` };
  for (const runId of ['run-old', 'run-new']) await fx.store.runs.createRun(realisticState(runId), slack);
  const fb = fx.store.feedback;
  await fb.record({
    runId: 'run-old',
    userId: 'U0OLD',
    value: 'good',
    at: now - 10 * DAY,
    channelId: 'C0OPS',
  });
  await fb.record({
    runId: 'run-new',
    userId: 'U0ALICE',
    value: 'good',
    at: now - 2 * DAY,
    channelId: 'C0OPS',
  });
  await fb.record({ runId: 'run-new', userId: 'U0BOB', value: 'bad', at: now - DAY, channelId: 'C0OPS' });
  await fb.comment('run-new', 'U0BOB', 'it missed the\nfailed deploy', now - DAY + 1);
});
afterAll(async () => {
  await fx?.cleanup();
  work.remove();
});

describe('loopgate feedback', () => {
  it('lists the feedback of the last 7 days, oldest first, with totals', async () => {
    const result = await cli('feedback', '--since', '7d');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^WHEN\s+VALUE\s+USER\s+RUN\s+CHANNEL\s+COMMENT$/);
    expect(lines[1]).toMatch(/good\s+U0ALICE\s+run-new\s+C0OPS$/);
    expect(lines[2]).toMatch(/bad\s+U0BOB\s+run-new\s+C0OPS\s+it missed the ⏎ failed deploy$/);
    expect(result.stdout).not.toContain('U0OLD');
    expect(lines.at(-1)).toBe('2 in all: 1 good, 1 bad (50% good)');
  });

  it('--json gives the records and the counts', async () => {
    const result = await cli('feedback', '--since', '30d', '--json');
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as { counts: unknown; feedback: Array<Record<string, unknown>> };
    expect(doc.counts).toEqual({ good: 2, bad: 1 });
    expect(doc.feedback.map((r) => r.userId)).toEqual(['U0OLD', 'U0ALICE', 'U0BOB']);
    expect(doc.feedback[2]).toMatchObject({
      runId: 'run-new',
      value: 'bad',
      comment: 'it missed the\nfailed deploy',
    });
  });

  it('says when there is none, and refuses a missing or bad --since', async () => {
    expect((await cli('feedback', '--since', '1h')).stdout).toMatch(/^No feedback from /);
    expect((await cli('feedback')).code).toBe(2);
    expect((await cli('feedback', '--since', 'yesterday')).code).toBe(2);
  });

  it('loopgate trace shows the feedback of the run', async () => {
    const result = await cli('trace', 'run-new');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Feedback:\n  - good from U0ALICE at ');
    expect(result.stdout).toMatch(/- bad from U0BOB at .*: it missed the ⏎ failed deploy/);
  });
});
