import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';
import type { ApprovalView } from '../../src/slack/approval-card.js';
import { SlackCallError } from '../../src/slack/errors.js';
import { SlackNotifier } from '../../src/slack/notifier.js';
import type { RunSlackContext } from '../../src/slack/notifier-port.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { type LogEntry, recordingLogger } from './recording-logger.js';

const INTERVAL = 250;
let fake: FakeSlack;
let logs: LogEntry[];
let notifier: SlackNotifier;
let ctx: RunSlackContext;
/** When the notifier issued each chat.postMessage / chat.update (not when the fake received it). */
let issued: { method: string; at: number }[];

function makeNotifier(opts: { token?: string; retries?: number } = {}) {
  const logger = recordingLogger(logs);
  const client = createSlackWebClient({
    token: opts.token ?? fake.token,
    apiUrl: fake.apiUrl,
    logger,
    retries: opts.retries ?? 2,
    minRetryDelayMs: 10,
    maxRetryDelayMs: 50,
    timeoutMs: 5_000,
    // What the worker gives its client (build-runtime.ts).
    fetch: createBufferedFetch(),
  });
  for (const method of ['postMessage', 'update'] as const) {
    const call = client.chat[method].bind(client.chat) as (args: never) => Promise<unknown>;
    (client.chat as Record<string, unknown>)[method] = (args: never) => {
      issued.push({ method: `chat.${method}`, at: Date.now() });
      return call(args);
    };
  }
  return new SlackNotifier({ client, logger, progressIntervalMs: INTERVAL });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function card(overrides: Partial<ApprovalView> = {}): ApprovalView {
  return {
    approvalId: 'apr_1',
    runId: ctx.runId,
    tool: 'page_oncall',
    effect: 'notify',
    args: { summary: 'payments down' },
    argsHash: 'h',
    requesterId: 'U0REQ',
    approvers: { users: ['U0MGR'], groups: [] },
    expiresAt: Date.now() + 3_600_000,
    status: 'pending',
    ...overrides,
  };
}

beforeEach(async () => {
  fake = await startFakeSlack();
  logs = [];
  issued = [];
  notifier = makeNotifier();
  const question = fake.userMessage({ channel: 'C0OPS', user: 'U0REQ', text: '<@UBOT0001> is payments ok?' });
  ctx = { runId: 'run_1', channelId: 'C0OPS', threadTs: question.ts, requestMessageTs: question.ts };
});

afterEach(async () => {
  await fake.close();
});

describe('SlackNotifier progress', () => {
  it('posts one placeholder in the thread and edits it in place', async () => {
    await notifier.progress(ctx, 'Thinking…');
    await notifier.progress(ctx, 'Querying Prometheus…');
    await notifier.flush(ctx);

    expect(fake.callsOf('chat.postMessage')).toHaveLength(1);
    expect(fake.callsOf('chat.update')).toHaveLength(1);
    const thread = fake.thread('C0OPS', ctx.threadTs);
    expect(thread).toHaveLength(2);
    expect(thread[1]?.text).toContain('Querying Prometheus…');
    expect(thread[1]?.edited).toBeDefined();
    expect(notifier.placeholderOf(ctx.runId)).toBe(thread[1]?.ts);
    expect(fake.callsOf('chat.postMessage')[0]?.headers.authorization).toBe(`Bearer ${fake.token}`);
  });

  it('edits at most once per interval and ends on the latest text', async () => {
    await notifier.progress(ctx, 'step 0');
    const started = Date.now();
    for (let i = 1; i <= 30; i++) {
      await notifier.progress(ctx, `step ${i}`);
      await sleep(25);
    }
    const elapsed = Date.now() - started;
    // The last edit comes within an interval; poll rather than sleep, the machine may be loaded.
    for (
      let waited = 0;
      waited < 5_000 && !fake.thread('C0OPS', ctx.threadTs)[1]?.text?.includes('step 30');
      waited += 50
    ) {
      await sleep(50);
    }

    const updates = fake.callsOf('chat.update');
    expect(updates.length).toBeGreaterThanOrEqual(2);
    expect(updates.length).toBeLessThanOrEqual(Math.ceil(elapsed / INTERVAL) + 1);
    // Issue times, so transit delays cannot shrink a gap. About an interval apart (the throttle counts from
    // just before the previous call is issued); without a throttle they would be 25 ms apart.
    const times = issued.map((c) => c.at);
    expect(issued.map((c) => c.method)).toEqual(['chat.postMessage', ...updates.map(() => 'chat.update')]);
    for (let i = 1; i < times.length; i++) {
      expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThanOrEqual(INTERVAL * 0.8);
    }
    expect(fake.thread('C0OPS', ctx.threadTs)[1]?.text).toContain('step 30');
  });

  it('edits the placeholder an earlier process posted instead of posting another', async () => {
    await notifier.progress(ctx, 'first job');
    const ts = notifier.placeholderOf(ctx.runId);
    const otherProcess = makeNotifier();
    await otherProcess.progress({ ...ctx, placeholderTs: ts }, 'resumed');
    await otherProcess.flush({ ...ctx, placeholderTs: ts });
    expect(fake.callsOf('chat.postMessage')).toHaveLength(1);
    expect(fake.message('C0OPS', ts ?? '')?.text).toContain('resumed');
  });

  it('logs with the run id and does not throw when Slack keeps failing', async () => {
    fake.failNext('chat.postMessage', 1, { kind: 'error', error: 'channel_not_found' });
    await expect(notifier.progress(ctx, 'Thinking…')).resolves.toBeUndefined();
    fake.failNext('chat.postMessage', 10, { kind: 'rate_limited', retryAfterSec: 0 });
    await notifier.progress(ctx, 'again');
    await notifier.flush(ctx);
    fake.failNext('reactions.add', 1, { kind: 'error', error: 'message_not_found' });
    await expect(notifier.reaction(ctx, 'working')).resolves.toBeUndefined();

    const warnings = logs.filter((l) => l.level === 'warn' && l.obj.runId === 'run_1');
    expect(warnings.map((w) => w.obj.slackError)).toEqual(
      expect.arrayContaining(['channel_not_found', 'ratelimited', 'message_not_found']),
    );
    // 1 refused + 3 rate-limited attempts (first try and 2 retries).
    expect(fake.callsOf('chat.postMessage')).toHaveLength(4);
  });

  it('keeps working when the token is wrong: logged, not thrown', async () => {
    const bad = makeNotifier({ token: 'xoxb-wrong' });
    await bad.progress(ctx, 'Thinking…');
    await bad.reaction(ctx, 'working');
    expect(logs.filter((l) => l.obj.slackError === 'invalid_auth').length).toBe(2);
  });
});

describe('SlackNotifier approval cards', () => {
  it('posts the card in the thread and returns where it is', async () => {
    const posted = await notifier.approvalCard(ctx, card());
    const message = fake.message(posted.channel, posted.ts);
    expect(message?.thread_ts).toBe(ctx.threadTs);
    expect(JSON.stringify(message?.blocks)).toContain('loopgate_approve');
  });

  it('retries a 429 after Retry-After seconds', async () => {
    fake.failNext('chat.postMessage', 1, { kind: 'rate_limited', retryAfterSec: 1 });
    const posted = await notifier.approvalCard(ctx, card());
    const [first, second] = fake.callsOf('chat.postMessage');
    expect([first?.status, second?.status]).toEqual([429, 200]);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    expect(fake.message('C0OPS', posted.ts)).toBeDefined();
  });

  it('throws when no card could be posted', async () => {
    fake.failNext('chat.postMessage', 1, { kind: 'error', error: 'channel_not_found' });
    await expect(notifier.approvalCard(ctx, card())).rejects.toMatchObject({
      code: 'slack_call_failed',
      slackError: 'channel_not_found',
    });
    fake.failNext('chat.postMessage', 3, { kind: 'http', status: 500 });
    await expect(notifier.approvalCard(ctx, card())).rejects.toBeInstanceOf(SlackCallError);
    expect(logs.some((l) => l.level === 'error' && l.obj.approvalId === 'apr_1')).toBe(true);
  });

  it('replaces the card in place after a decision', async () => {
    const posted = await notifier.approvalCard(ctx, card());
    const ok = await notifier.updateCard(
      ctx,
      posted,
      card({ status: 'approved', decidedBy: 'U0MGR', decidedAt: Date.now() }),
    );
    expect(ok).toBe(true);
    const message = fake.message(posted.channel, posted.ts);
    expect(JSON.stringify(message?.blocks)).not.toContain('loopgate_approve');
    expect(JSON.stringify(message?.blocks)).toContain('Approved');
    expect(await notifier.updateCard(ctx, { channel: 'C0OPS', ts: '9.999999' }, card())).toBe(false);
  });
});

describe('SlackNotifier final answer, errors and reactions', () => {
  it('posts the answer, removes the placeholder and returns the answer ts', async () => {
    await notifier.progress(ctx, 'Thinking…');
    await notifier.progress(ctx, 'pending text that must not land after the answer');
    const ts = await notifier.finalAnswer(ctx, {
      parts: ['Payments is **healthy**.'],
      stopReason: 'completed',
    });

    const thread = fake.thread('C0OPS', ctx.threadTs);
    expect(thread.map((m) => m.ts)).toEqual([ctx.requestMessageTs, ts]);
    expect(thread[1]?.blocks?.[0]).toEqual({ type: 'markdown', text: 'Payments is **healthy**.' });
    await sleep(INTERVAL + 50);
    expect(fake.callsOf('chat.update')).toHaveLength(0);
  });

  it('never edits the placeholder after deleting it, whatever progress arrives during or after the answer', async () => {
    await notifier.progress(ctx, 'Thinking…');
    const placeholderTs = notifier.placeholderOf(ctx.runId);
    // A second job of the same run in this process (a redelivered one) keeps reporting progress while
    // the first delivers the answer, and after: it knows the placeholder from the stored run.
    const late = { ...ctx, placeholderTs };
    const answering = notifier.finalAnswer(ctx, { parts: ['done'], stopReason: 'completed' });
    await notifier.progress(late, 'Querying Prometheus…');
    await answering;
    await notifier.progress(late, 'Thinking…');
    await notifier.flush(late);
    await sleep(INTERVAL + 100);

    const deleted = fake.callsOf('chat.delete');
    expect(deleted.map((c) => c.args.ts)).toEqual([placeholderTs]);
    const after = fake.calls.slice(fake.calls.indexOf(deleted[0]!));
    expect(after.filter((c) => c.method === 'chat.update')).toEqual([]);
    expect(fake.callsOf('chat.update').filter((c) => c.response?.ok !== true)).toEqual([]);
  });

  it('posts a long answer as several messages in order', async () => {
    const answer = Array.from({ length: 25 }, (_, i) => `${i} ${'x'.repeat(995)}`).join('\n\n');
    await notifier.finalAnswer(ctx, { parts: [answer], stopReason: 'max_steps' });
    const replies = fake.thread('C0OPS', ctx.threadTs).slice(1);
    expect(replies.length).toBe(3);
    expect(JSON.stringify(replies[2]?.blocks)).toContain('maximum number of steps');
  });

  it('returns null and logs when the answer cannot be posted', async () => {
    fake.failNext('chat.postMessage', 1, { kind: 'error', error: 'is_archived' });
    expect(await notifier.finalAnswer(ctx, { parts: ['x'], stopReason: 'completed' })).toBeNull();
    expect(logs.some((l) => l.obj.runId === 'run_1' && l.obj.slackError === 'is_archived')).toBe(true);
  });

  it('posts an error note escaped and removes the placeholder', async () => {
    await notifier.progress(ctx, 'Thinking…');
    await notifier.error(ctx, 'The model is unreachable <!channel>');
    const thread = fake.thread('C0OPS', ctx.threadTs);
    expect(thread).toHaveLength(2);
    expect(thread[1]?.text).toContain('&lt;!channel&gt;');
  });

  it('marks the question: eyes while working, then a check mark (or a cross) instead', async () => {
    await notifier.reaction(ctx, 'working');
    expect(fake.message('C0OPS', ctx.requestMessageTs)?.reactions.map((r) => r.name)).toEqual(['eyes']);
    await notifier.reaction(ctx, 'working');
    await notifier.reaction(ctx, 'done');
    expect(fake.message('C0OPS', ctx.requestMessageTs)?.reactions.map((r) => r.name)).toEqual([
      'white_check_mark',
    ]);
    await notifier.reaction(ctx, 'failed');
    expect(fake.message('C0OPS', ctx.requestMessageTs)?.reactions.map((r) => r.name)).toEqual([
      'white_check_mark',
      'x',
    ]);
    expect(logs.filter((l) => l.level === 'warn')).toEqual([]);
  });
});
