/**
 * The worker's wiring (buildWorkerRuntime): MCP tools join the registry next to the built-ins, a changed
 * list on the server replaces `rt.tools` (what the next job reads) and the system prompt's tool list,
 * and a tool taking a built-in's name stops start-up with a ConfigError naming it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { createLogger } from '../../src/log/logger.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { createRunsQueue } from '../../src/queue/runs-queue.js';
import { createStore } from '../../src/store/store.js';
import { buildWorkerRuntime } from '../../src/worker/build-runtime.js';
import { type HttpMcpServer, startHttpMcpServer } from './servers/http-server.js';
import { misbehaving, waitFor } from './support.js';

const redis = createRedisConnection(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'store');
const prefix = `{lgmcprt${process.pid}}`;
const env = loadEnv(
  {
    SLACK_BOT_TOKEN: 'xoxb-test',
    SLACK_API_URL: 'http://127.0.0.1:9/api/',
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
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

let server: HttpMcpServer;
beforeAll(async () => {
  server = await startHttpMcpServer();
});
afterAll(async () => {
  await server?.close();
  redis.disconnect();
});

describe('buildWorkerRuntime with MCP servers', { timeout: 30_000 }, () => {
  it('serves MCP tools beside the built-ins and swaps the registry when the server’s list changes', async () => {
    const rt = await buildWorkerRuntime(
      parts(
        `tools: { current_time: {} }\nmcp: { servers: { web: { url: "${server.url}", effect: read } } }\n`,
      ),
    );
    try {
      const before = rt.tools;
      const prompt = rt.policy.systemPrompt('C0X');
      expect([...before.keys()]).toEqual(['current_time', 'web__lookup', 'web__remove']);
      server.addTool('later');
      await waitFor('the new registry', () => rt.tools.has('web__later'));
      expect(rt.tools).not.toBe(before);
      expect(before.has('web__later')).toBe(false);
      // The tools reach the model in the request's tool list; the system prompt stays one cached prefix.
      expect(rt.policy.systemPrompt('C0X')).toBe(prompt);
    } finally {
      await rt.mcp.close();
    }
  });

  it('refuses to start when an MCP tool takes a built-in tool’s name', async () => {
    const started = buildWorkerRuntime(
      parts(
        `approvals: { approvers: [U0MGR] }\ntools: { current_time: {} }\nmcp: { servers: { clash: { command: ${JSON.stringify(misbehaving('collide'))} } } }\n`,
      ),
    );
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toMatchObject({
      problems: [
        {
          key: 'mcp.servers.clash',
          problem: expect.stringContaining('its tool current_time takes the name of the tool current_time'),
        },
      ],
    });
  });
});
