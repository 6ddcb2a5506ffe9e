/**
 * `npm run demo` as a fresh clone runs it: the real bot and worker processes, the stand-in Slack and the
 * scripted model. Exit 0, the story's key lines in the output, and nothing left in Redis; without Redis,
 * exit 1 saying how to start it.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { type Program, REPO_ROOT, spawnProgram } from './spawn-program.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

let demo: Program | undefined;
afterEach(async () => {
  await demo?.stop();
  demo = undefined;
});

describe('npm run demo', { timeout: 70_000 }, () => {
  it('plays the on-call story end to end, prints the thread and the trace, and exits 0', async () => {
    demo = spawnProgram('demo', { REDIS_URL }, REPO_ROOT);
    const code = await demo.exited;
    const out = demo.stdout();
    expect(code, `${out}\n${demo.stderr()}`).toBe(0);

    // Bob is refused, only he sees why, and his click changed nothing.
    expect(out).toContain('▸ bob clicks Approve → refused');
    expect(out).toMatch(
      /\(only visible to bob\)\n {2}You may not approve `run_action` calls\. They can be decided by @manager/,
    );
    // The manager's approval is on the card, which first had the buttons.
    expect(out).toContain('│ ■ ✅ Approved: run_action');
    expect(out).toMatch(/│ ✅ \*Approved\* by @manager /);
    expect(out).toContain(
      '(edited in place: it first read "✋ Approval needed: run_action" with [ Approve ] [ Reject ] [ Edit ] [ Details ])',
    );
    expect(out).toContain('Sends **POST** `http://127.0.0.1:');
    // Exactly one restart, verified.
    expect(out).toContain(
      '▸ the restart ran once (payments received 1 restart call), its verification passed',
    );
    expect(out).toMatch(/Verification: GET http:\/\/127\.0\.0\.1:\d+\/health\/payments answered 2xx/);
    // The final answer, and the reaction on Alice's question.
    expect(out).toContain('**payments was degraded; it is healthy again after a restart.**');
    expect(out).toMatch(/alice\n {2}@loopgate payments is slow, what's going on\?\n {2}✅ loopgate/);
    // The trace, from the store.
    expect(out).toMatch(/Run r-\S+: completed \(completed\)/);
    expect(out).toMatch(/- run_action \[write\] \S+: approved by U0MGR at .*; execution succeeded/);
    expect(out).toContain('✔ Demo complete');

    const prefix = /under (\{loopgate-demo-[0-9a-f]+\})/.exec(out)?.[1];
    expect(prefix).toBeDefined();
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.keys(`${prefix?.slice(1, -1)}:*`)).toEqual([]);
      expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('without Redis it says how to start it and exits 1', async () => {
    demo = spawnProgram('demo', { REDIS_URL: 'redis://127.0.0.1:1' }, REPO_ROOT);
    expect(await demo.exited).toBe(1);
    expect(demo.stderr()).toContain('Redis is not reachable at redis://127.0.0.1:1');
    expect(demo.stderr()).toContain('start Redis: redis-server');
  });
});
