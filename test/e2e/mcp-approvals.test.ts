/**
 * MCP tools end to end, with loopgate's real processes (`npm run bot` and two `npm run worker`), the fake
 * Slack and the fake OpenAI. Each worker starts the real @modelcontextprotocol/server-filesystem over
 * stdio, a test server with a slow write, and a server that cannot start. Reads run at once; write_file
 * waits for a card showing the server, the tool, its annotations and the arguments, and the file appears
 * only after Approve; a double click writes once; a worker SIGKILLed mid-call leaves outcome_unknown and
 * the call is not sent again. /readyz names the server that is missing and stays 200.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { bin, misbehaving } from '../mcp/support.js';
import { spawnLoopgate } from './support/loopgate-process.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { buttonsOf, cardsIn, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';
import { tempDir } from './support/temp-config.js';

const dir = mkdtempSync(join(tmpdir(), 'lg-e2e-mcp-'));
const appended = join(dir, 'appended.txt');
const quick = join(dir, 'quick.txt');
writeFileSync(join(dir, 'notes.txt'), 'the deploy window is 14:00-16:00 UTC\n');

let w: SlackWorld;
beforeAll(async () => {
  const servers = {
    fs: { command: [bin('mcp-server-filesystem'), dir], approvers: [PEOPLE.manager] },
    slow: { command: misbehaving('slow-write', appended, 120_000), approvers: [PEOPLE.manager] },
    quick: { command: misbehaving('slow-write', quick, 0), approvers: [PEOPLE.manager] },
    gone: { command: [join(dir, 'no-such-server')] },
  };
  w = await startSlackWorld({
    mode: 'split',
    workers: 2,
    policyExtra: [`mcp: ${JSON.stringify({ servers })}`],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const lines = (path: string) =>
  existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];

/** The worker process holding the run's lease (as in slack-reapprove.test.ts). */
function workerHolding(runId: string) {
  return w.waitFor(`the worker holding run ${runId}`, async () => {
    const holder = await w.store.context.redis.hget(w.store.context.keys.run(runId).lease, 'holder');
    const pid = Number(/-(\d+)-[0-9a-f]{8}\//.exec(holder ?? '')?.[1]);
    return w.processes.find((p) => p.entry === 'worker' && p.logs().some((l) => l.pid === pid));
  });
}

async function askFor(tag: string, tool: string, args: unknown) {
  w.model.brain(
    tag,
    callThenAnswer(tool, args, (r) => (succeeded(r) ? `done: ${tag}` : `not done: ${tag}`)),
  );
  const channel = w.newChannel();
  return w.ask(channel, PEOPLE.requester, w.model.tagged(tag, `please use ${tool}`));
}

describe('a worker whose MCP server takes a built-in tool’s name', () => {
  it('exits 1 at start-up naming the server and the tool', async () => {
    const config = tempDir();
    try {
      const servers = { clash: { command: misbehaving('collide'), approvers: [PEOPLE.manager] } };
      const path = config.write(
        'clash.yaml',
        `tools: { current_time: {} }\nmcp: ${JSON.stringify({ servers })}\n`,
      );
      const worker = spawnLoopgate(
        'worker',
        {
          REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
          LOOPGATE_PREFIX: '{lgmcpclash}',
          SLACK_BOT_TOKEN: 'xoxb-test',
          SLACK_API_URL: 'http://127.0.0.1:9/api/',
          OPENAI_API_KEY: 'sk-test',
          OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
          LOOPGATE_CONFIG: path,
          METRICS_PORT: '0',
        },
        config.dir,
      );
      const exit = await worker.exit;
      expect(exit.code).toBe(1);
      expect(worker.stderr()).toContain(
        `invalid configuration in ${path}:\n  mcp.servers.clash: its tool current_time takes the name of the tool current_time`,
      );
      expect(worker.logs().map((l) => l.msg)).not.toContain('worker started');
    } finally {
      config.remove();
    }
  }, 30_000);
});

describe('MCP tools through the real bot and workers', { timeout: 90_000 }, () => {
  it('a read tool runs at once: no card, the answer quotes the file', async () => {
    const asked = await askFor('mcp-read', 'fs__read_text_file', { path: join(dir, 'notes.txt') });
    const run = await w.ended(asked.runId);
    expect(run.state.status).toBe('completed');
    const result = run.state.messages.find((m) => m.role === 'tool');
    expect(result?.content).toContain('the deploy window is 14:00-16:00 UTC');
    expect(cardsIn(w.slack.thread(asked.channel, asked.threadTs))).toEqual([]);
  });

  it('write_file waits for a card with server, tool, annotations and arguments; the file appears after Approve; a double click writes once', async () => {
    const target = join(dir, 'approved.txt');
    const asked = await askFor('mcp-write', 'fs__write_file', { path: target, content: 'approved text' });
    const card = await w.card(asked);
    const words = wordsOf(w.message(card));
    expect(words).toContain('Approval needed');
    expect(words).toContain('fs__write_file');
    expect(words).toMatch(/MCP server\W+`fs`/);
    expect(words).toContain('readOnlyHint: false');
    expect(words).toContain(target);
    expect(words).toContain('approved text');
    expect(existsSync(target)).toBe(false);

    const clicks = await Promise.all([
      w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve),
      w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve),
    ]);
    expect(clicks.map((r) => r.status)).toEqual([200, 200]);
    const run = await w.ended(asked.runId);
    expect(run.state.status).toBe('completed');
    expect(readFileSync(target, 'utf8')).toBe('approved text');
    expect(run.state.actions).toEqual([
      expect.objectContaining({ tool: 'fs__write_file', outcome: 'succeeded' }),
    ]);
    expect(run.state.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
  });

  it('a double click on an MCP write that appends: the line is appended once', async () => {
    const asked = await askFor('mcp-double', 'quick__append_line', { line: 'double-clicked' });
    const card = await w.card(asked);
    expect(lines(quick)).toEqual([]);
    await Promise.all([
      w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve),
      w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve),
      w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve),
    ]);
    const run = await w.ended(asked.runId);
    expect(run.state.status).toBe('completed');
    expect(lines(quick)).toEqual(['double-clicked']);
  });

  it('a worker SIGKILLed while an approved MCP write runs: outcome_unknown, and the call is not sent again', async () => {
    const asked = await askFor('mcp-kill', 'slow__append_line', { line: 'only once' });
    const card = await w.card(asked);
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    await w.waitFor('the server to start the write', () => lines(`${appended}.started`).length === 1);
    (await workerHolding(asked.runId)).kill('SIGKILL');

    await w.waitFor(
      'the card to say the outcome is unknown',
      () => buttonsOf(w.message(card).blocks).some((b) => b.actionId === ACTION_IDS.reapprove),
      45_000,
    );
    const run = await w.ended(asked.runId, 30_000);
    expect(run.state.actions.map((a) => a.outcome)).toEqual(['outcome_unknown']);
    expect(wordsOf(w.message(card))).toContain('Outcome unknown');
    // The surviving worker's own slow server was never asked: one start, and the killed one never finished.
    expect(lines(`${appended}.started`)).toEqual(['started:only once']);
    expect(lines(appended)).toEqual([]);
  });

  it('/readyz of a worker names the MCP server that is missing and stays ready', async () => {
    // Worker i serves workerMetricsUrls[i]; one of them was killed above.
    const workers = w.processes.filter((p) => p.entry === 'worker');
    const alive = workers.findIndex((p) => !p.exited());
    const res = await fetch(w.workerMetricsUrls[alive]?.replace(/\/metrics$/, '/readyz') ?? '');
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      ok: boolean;
      mcp: Record<string, { state: string; error?: string }>;
    };
    expect(body.ok).toBe(true);
    expect(body.mcp.fs?.state).toBe('connected');
    expect(body.mcp.gone).toMatchObject({ state: 'failed', error: expect.stringContaining('ENOENT') });
    const logged = workers[alive]?.logs().find((l) => l.msg.startsWith('MCP server gone is unavailable'));
    expect(logged).toBeDefined();
  });
});
