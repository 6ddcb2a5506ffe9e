/**
 * A worker starting with a rule that cannot apply as written, or a channel rule naming no tool, logs a
 * warning naming it (and starts).
 */
import { afterAll, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { parsePolicy } from '../../src/config/policy.js';
import type { Logger } from '../../src/log/logger.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { createRunsQueue } from '../../src/queue/runs-queue.js';
import { createStore } from '../../src/store/store.js';
import { buildWorkerRuntime } from '../../src/worker/build-runtime.js';
import { SCALE_POLICY } from '../policy/scale-policy.js';
import { recordingLogger } from '../slack/recording-logger.js';

const redis = createRedisConnection(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'store');
const prefix = `{lgrulewarn${process.pid}}`;
afterAll(() => redis.disconnect());

it('logs each rule that cannot apply to its tool arguments at start-up', async () => {
  const logger = recordingLogger();
  const rt = await buildWorkerRuntime({
    env: loadEnv(
      {
        SLACK_BOT_TOKEN: 'xoxb-test',
        SLACK_API_URL: 'http://127.0.0.1:9/api/',
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
        OPENAI_MODEL: 'main-model',
      },
      { need: 'worker', envFile: false },
    ),
    policy: parsePolicy(
      `${SCALE_POLICY}
channels:
  rules:
    - match: { kind: dm }
      readOnly: [run_acton]
`,
      { env: {} },
    ),
    logger: logger as unknown as Logger,
    store: createStore(redis, { prefix }),
    queue: createRunsQueue(redis, prefix),
    stopping: () => false,
  });
  try {
    const warned = logger.entries.filter((e) => e.msg === 'policy rule cannot apply as written');
    expect(warned.map((e) => e.obj)).toEqual([
      expect.objectContaining({
        key: 'rules.run_action[0].when.params.replicas',
        problem: expect.stringMatching(/^> 10 compares numbers, and params\.replicas is typed string/),
      }),
    ]);
    const channel = logger.entries.filter((e) => e.msg === 'channel rule names no tool');
    expect(channel.map((e) => e.obj)).toEqual([
      expect.objectContaining({
        key: 'channels.rules[0].readOnly[0]',
        problem: '"run_acton" matches no tool: the tool it meant is not made read-only there',
      }),
    ]);
  } finally {
    await rt.mcp.close();
  }
});
