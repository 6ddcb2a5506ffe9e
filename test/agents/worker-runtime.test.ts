/**
 * The worker's wiring of sub-agents (buildWorkerRuntime): each agent's `ask_` tool joins the registry, an
 * agent naming a model talks to that model, and a tool an agent lists that nothing provides stops start-up.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { createLogger } from '../../src/log/logger.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { createRunsQueue } from '../../src/queue/runs-queue.js';
import { createStore } from '../../src/store/store.js';
import { buildWorkerRuntime } from '../../src/worker/build-runtime.js';

const redis = createRedisConnection(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'store');
const prefix = `{lgagentsrt${process.pid}}`;
afterAll(() => redis.disconnect());
const env = loadEnv(
  {
    SLACK_BOT_TOKEN: 'xoxb-test',
    SLACK_API_URL: 'http://127.0.0.1:9/api/',
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    OPENAI_MODEL: 'main-model',
  },
  { need: 'worker', envFile: false },
);
const parts = (yaml: string) => ({
  env,
  policy: parsePolicy(yaml, { env: {} }),
  logger: createLogger({ level: 'silent', service: 'test' }),
  store: createStore(redis, { prefix }),
  queue: createRunsQueue(redis, prefix),
  stopping: () => false,
});

const AGENTS = `
tools: { current_time: {} }
agents:
  a: { description: Agent a., prompt: You are A., tools: [current_time, ask_b], model: small-model }
  b: { description: Agent b., prompt: You are B. }
`;

describe('buildWorkerRuntime with agents', () => {
  it('offers each agent as ask_<name> and gives an agent its own model', async () => {
    const rt = await buildWorkerRuntime(parts(AGENTS));
    try {
      expect([...rt.tools.keys()]).toEqual(['current_time', 'ask_a', 'ask_b']);
      expect(rt.tools.get('ask_a')?.delegate).toEqual({ agent: 'a' });
      const a = rt.agents?.definitions.get('a');
      const b = rt.agents?.definitions.get('b');
      expect(rt.agents?.modelOf(a!).model).toBe('small-model');
      expect(rt.agents?.modelOf(b!)).toBe(rt.model);
      expect(rt.model.model).toBe('main-model');
    } finally {
      await rt.mcp.close();
    }
  });

  it('refuses to start when an agent lists a tool that is not enabled', async () => {
    const started = buildWorkerRuntime(
      parts(AGENTS.replace('[current_time, ask_b]', '[current_time, http_get]')),
    );
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toMatchObject({
      problems: [{ key: 'agents.a.tools[1]', problem: expect.stringContaining('no tool named http_get') }],
    });
  });
});
