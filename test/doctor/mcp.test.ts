/**
 * `loopgate doctor` starts each MCP server of the policy: a server that starts lists its tools with the
 * effect loopgate applies, one that cannot start is a failed line in its own words; the model is offered
 * the MCP tools too, as the workers would offer them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyWorkDir, runCli } from '../cli/cli-harness.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { bin } from '../mcp/support.js';

const work = emptyWorkDir();
let slack: FakeSlack;
let model: FakeOpenAI;

beforeAll(async () => {
  slack = await startFakeSlack();
  model = await startFakeOpenAI([{ content: 'ok' }]);
});
afterAll(async () => {
  await Promise.all([slack?.close(), model?.close()]);
  work.remove();
});

describe('loopgate doctor and MCP servers', { timeout: 60_000 }, () => {
  it('one line per server: its tools and their effects, or why it did not start', async () => {
    const files = join(work.dir, 'files');
    mkdirSync(files);
    const servers = {
      fs: { command: [bin('mcp-server-filesystem'), files], tools: { move_file: { effect: 'notify' } } },
      gone: { command: [join(work.dir, 'no-such-server')] },
    };
    writeFileSync(
      join(work.dir, 'loopgate.yaml'),
      `approvals: { approvers: [U0MGR] }\ntools: { current_time: {} }\nmcp: ${JSON.stringify({ servers })}\n`,
    );
    const result = await runCli(
      ['doctor', '--json'],
      {
        SLACK_BOT_TOKEN: slack.token,
        SLACK_SIGNING_SECRET: 's',
        SLACK_API_URL: slack.apiUrl,
        OPENAI_API_KEY: 'k',
        OPENAI_BASE_URL: model.url,
        REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
        METRICS_PORT: '0',
        BOT_METRICS_PORT: '0',
      },
      work.dir,
    );
    const report = JSON.parse(result.stdout) as {
      ok: boolean;
      checks: { name: string; status: string; detail: string }[];
    };
    const fs = report.checks.find((c) => c.name === 'mcp fs');
    expect(fs?.status).toBe('ok');
    expect(fs?.detail).toMatch(/^14 tools listed: /);
    expect(fs?.detail).toContain('fs__read_text_file read');
    expect(fs?.detail).toContain('fs__move_file notify');
    const gone = report.checks.find((c) => c.name === 'mcp gone');
    expect(gone?.status).toBe('fail');
    expect(gone?.detail).toMatch(/^could not start or connect: .*ENOENT/);
    expect(report.ok).toBe(false);
    expect(result.code).toBe(1);
    const offered = model.requests[0]?.body.tools?.map((t) => t.function.name) ?? [];
    expect(offered).toContain('current_time');
    expect(offered).toContain('fs__read_text_file');
  });
});
