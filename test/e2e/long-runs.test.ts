/**
 * Runs longer than the context window, end to end: a real worker process, real Redis, the fake Slack,
 * and the fake OpenAI server with a small context window that refuses any request longer than it (like
 * the real API) and any request whose tool messages do not answer their calls.
 *
 * - A 150-step run adds up a number from each of 149 pages: its history is compacted many times, and the
 *   "model" (a brain that only knows what each request shows it) still gets the total right, because
 *   each summary carries the running total and the messages after the cut carry the rest.
 * - A log too long to show whole is kept with the run and paged with read_result.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import type { FakeReply, RecordedRequest, WireMessage } from '../fakes/openai-server.js';
import { killAllLoopgate } from './support/loopgate-process.js';
import { wordsOf } from './support/slack-view.js';
import { CHANNEL, startWorld, type World } from './support/world.js';

const ITEMS = 149;
const WINDOW = 12_000;
const itemValue = (n: number) => ((n * 7919) % 1000) + n;
const TOTAL = Array.from({ length: ITEMS }, (_, i) => itemValue(i + 1)).reduce((a, b) => a + b, 0);

const LOG_LINES = 5_000;
const ERROR_LINE = 3_217;
const logLine = (i: number) =>
  i === ERROR_LINE
    ? `2026-03-01T10:00:${i} ERROR payments: card network timeout after 30000 ms (acquirer=acq-7)`
    : `2026-03-01T10:00:${i} INFO payments: request ${i} served in ${(i * 37) % 200} ms`;

let world: World | undefined;
let data: HttpFixture | undefined;
afterEach(async () => {
  await killAllLoopgate();
  await world?.close();
  await data?.close();
  world = undefined;
  data = undefined;
});

async function startData(): Promise<HttpFixture> {
  return startHttpFixture((req, res) => {
    const item = /^\/item\/(\d+)$/.exec(req.path);
    if (item) {
      const n = Number(item[1]);
      const filler = Array.from(
        { length: 30 },
        (_, j) => `line ${j} of item ${n}: nothing to note, latency ${(n + j) % 90} ms`,
      );
      reply(res, 200, 'text/plain', [`value of item ${n} is ${itemValue(n)}`, ...filler].join('\n'));
      return;
    }
    if (req.path === '/log') {
      reply(res, 200, 'text/plain', Array.from({ length: LOG_LINES }, (_, i) => logLine(i + 1)).join('\n'));
      return;
    }
    reply(res, 404, 'text/plain', 'not found');
  });
}

function policy(dataUrl: string): string {
  return [
    'model:',
    '  name: fake-small-window',
    `  contextTokens: ${WINDOW}`,
    '  compactAtPercent: 70',
    '  prices: { input_per_mtok: 0, output_per_mtok: 0 }',
    'budgets:',
    '  maxSteps: 200',
    '  maxTokens: 100000000',
    '  deadlineSeconds: 900',
    '  maxObservationChars: 4000',
    'approvals:',
    '  approvers: [U0MGR]',
    'tools:',
    '  http_get:',
    '    allow:',
    `      - prefix: ${JSON.stringify(`${dataUrl}/`)}`,
    '        allowPrivate: true',
    '',
  ].join('\n');
}

const text = (m: WireMessage): string =>
  typeof m.content === 'string' ? m.content : m.content ? JSON.stringify(m.content) : '';

/** The summariser: the previous running total plus the items whose results the part shows. */
function summarise(req: RecordedRequest): FakeReply {
  const body = text(req.body.messages[1]!);
  const before = /Running total of items 1-(\d+): (\d+)/.exec(body);
  let upTo = before ? Number(before[1]) : 0;
  let total = before ? Number(before[2]) : 0;
  const seen = new Map<number, number>();
  for (const m of body.matchAll(/value of item (\d+) is (\d+)/g)) seen.set(Number(m[1]), Number(m[2]));
  for (const [n, v] of [...seen].sort((a, b) => a[0] - b[0])) {
    if (n !== upTo + 1) continue;
    total += v;
    upTo = n;
  }
  return { content: `Running total of items 1-${upTo}: ${total}. Next I fetch item ${upTo + 1}.` };
}

/** The agent: knows only what the request shows, the summary's running total and the results after it. */
function sumItems(dataUrl: string) {
  return (req: RecordedRequest): FakeReply => {
    const messages = req.body.messages;
    if (!req.body.tools) return summarise(req);
    let upTo = 0;
    let total = 0;
    for (const m of messages) {
      const summary = m.role === 'assistant' ? /Running total of items 1-(\d+): (\d+)/.exec(text(m)) : null;
      if (summary) {
        upTo = Number(summary[1]);
        total = Number(summary[2]);
      }
    }
    const values = new Map<number, number>();
    for (const m of messages) {
      if (m.role !== 'tool') continue;
      const found = /value of item (\d+) is (\d+)/.exec(text(m));
      if (found && Number(found[1]) > upTo) values.set(Number(found[1]), Number(found[2]));
    }
    for (let n = upTo + 1; values.has(n); n++) {
      total += values.get(n)!;
      upTo = n;
    }
    if (upTo >= ITEMS) return { content: `The total of items 1-${ITEMS} is ${total}.` };
    return {
      content: null,
      toolCalls: [{ name: 'http_get', arguments: JSON.stringify({ url: `${dataUrl}/item/${upTo + 1}` }) }],
    };
  };
}

describe('runs longer than the context window (real worker, fake model with a small window)', () => {
  it('a 150-step run compacts many times and still answers correctly; no request passes the window', async () => {
    data = await startData();
    const dataUrl = data.url;
    world = await startWorld({
      script: [],
      holdMs: 0,
      policy: policy(dataUrl),
      openai: { contextTokens: WINDOW },
    });
    const w = world;
    const brain = sumItems(dataUrl);
    for (let i = 0; i < 400; i++) w.openai.push(brain);
    w.startWorker();
    const { runId, threadTs } = await w.ask(`Add up the values of items 1 to ${ITEMS}.`);
    const run = await w.waitFor(
      'the run to finish',
      async () => {
        const loaded = await w.loadRun(runId);
        return loaded?.state.stopReason ? loaded : null;
      },
      240_000,
    );
    expect(run.state.stopReason).toBe('completed');
    expect(run.state.answer).toEqual([`The total of items 1-${ITEMS} is ${TOTAL}.`]);
    expect(run.state.step).toBe(ITEMS + 1);
    expect(data.requests.filter((r) => r.path.startsWith('/item/'))).toHaveLength(ITEMS);
    // The server refused nothing: no request too long, none with a tool message out of place.
    expect(w.openai.tooLong).toEqual([]);
    expect(w.openai.malformed).toEqual([]);
    expect(Math.max(...w.openai.counted)).toBeLessThanOrEqual(WINDOW);
    // Compacted many times; the stored history kept every message.
    const compactions = run.state.compactions ?? [];
    expect(compactions.length).toBeGreaterThanOrEqual(5);
    expect(run.state.messages).toHaveLength(2 + ITEMS * 2 + 1);
    const summaries = w.openai.requests.filter((r) => !r.body.tools);
    expect(summaries.length).toBe(compactions.reduce((n, c) => n + c.calls, 0));
    // Every call is charged to the run's budget, summary calls included: the server's own counts.
    expect(run.state.usage.inputTokens).toBe(w.openai.counted.reduce((a, b) => a + b, 0));
    expect(compactions.reduce((n, c) => n + c.usage.inputTokens, 0)).toBeGreaterThan(0);
    // The answer reached the thread; the trace recorded each compaction's duration.
    const answer = `The total of items 1-${ITEMS} is ${TOTAL}.`;
    await w.waitFor(
      'the answer in the thread',
      async () => w.slack.thread(CHANNEL, threadTs).some((m) => wordsOf(m).includes(answer)),
      20_000,
    );
    const trace = await w.store.runs.readTrace(runId);
    expect(trace.filter((e) => e.type === 'context_compacted')).toHaveLength(compactions.length);
  }, 300_000);

  it('a log too long to show is kept with the run and paged with read_result; a made-up handle is an error result', async () => {
    data = await startData();
    const dataUrl = data.url;
    world = await startWorld({
      script: [],
      holdMs: 0,
      policy: policy(dataUrl),
      openai: { contextTokens: 60_000 },
    });
    const w = world;
    const lastTool = (req: RecordedRequest) => req.body.messages.filter((m) => m.role === 'tool').at(-1)!;
    const result = (m: WireMessage) => JSON.parse(text(m)) as ToolResult;
    let handle = '';
    w.openai.push(
      {
        content: 'Reading the payments log.',
        toolCalls: [{ name: 'http_get', arguments: JSON.stringify({ url: `${dataUrl}/log` }) }],
      },
      (req) => {
        const cut = result(lastTool(req));
        handle = cut.ok ? (cut.truncated?.handle ?? '') : '';
        return {
          toolCalls: [
            { name: 'read_result', arguments: JSON.stringify({ handle, grep: 'error' }) },
            { name: 'read_result', arguments: JSON.stringify({ handle: 'res_00000000_made_up' }) },
          ],
        };
      },
      (req) => {
        const page = result(req.body.messages.filter((m) => m.role === 'tool').at(-2)!);
        const line = page.ok ? /\n(\d+): .* ERROR/.exec(String(page.data)) : null;
        return {
          toolCalls: [
            {
              name: 'read_result',
              arguments: JSON.stringify({ handle, offset: Number(line?.[1]), lines: 1 }),
            },
          ],
        };
      },
      (req) => {
        const page = result(lastTool(req));
        return { content: `Found it: ${page.ok ? String(page.data).split('\n')[1] : 'nothing'}` };
      },
    );
    w.startWorker();
    const { runId } = await w.ask('Why did payments fail at 10:00?');
    const run = await w.waitFor(
      'the run to finish',
      async () => {
        const loaded = await w.loadRun(runId);
        return loaded?.state.stopReason ? loaded : null;
      },
      60_000,
    );
    expect(run.state.stopReason).toBe('completed');
    expect(run.state.answer).toEqual([`Found it: ${logLine(ERROR_LINE)}`]);
    const tools = run.state.messages
      .filter((m) => m.role === 'tool')
      .map((m) => JSON.parse(m.content) as ToolResult);
    // The cut log: whole lines with their numbers, the size, the handle.
    const cut = tools[0]!;
    expect(cut.ok && cut.truncated?.lines?.total).toBe(LOG_LINES + 3);
    expect(cut.ok && String(cut.data)).toContain(`The whole result is kept under the handle ${handle}.`);
    expect(String(cut.ok && cut.data).length).toBeLessThanOrEqual(4_000);
    // The grep page, the refused made-up handle, the page at the error line.
    expect(tools[1]).toEqual({
      ok: true,
      data: `[lines containing "error" (any case) from line 1 of ${LOG_LINES + 3}: 1 shown]\n${ERROR_LINE + 3}: ${logLine(ERROR_LINE)}\n[no more matches]`,
    });
    expect(tools[2]).toMatchObject({ ok: false, error: { code: 'unknown_handle' } });
    expect(tools[3]).toMatchObject({
      ok: true,
      data: expect.stringContaining(`[line ${ERROR_LINE + 3} of ${LOG_LINES + 3}]\n${logLine(ERROR_LINE)}`),
    });
    // Kept in the run's own hash, with the run's retention once it finished.
    const key = w.store.context.keys.run(runId).results;
    expect(await w.store.results.read(runId, handle)).toContain(logLine(ERROR_LINE));
    expect(await w.store.results.read(runId, handle)).toMatch(/^HTTP 200 OK for GET /);
    const ttl = await w.store.context.redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(w.openai.malformed).toEqual([]);
  }, 120_000);
});
