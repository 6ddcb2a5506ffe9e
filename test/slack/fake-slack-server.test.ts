import { webApi } from '@slack/bolt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';

let fake: FakeSlack;
let client: webApi.WebClient;

beforeEach(async () => {
  fake = await startFakeSlack({
    groups: { S0SRE: ['U1', 'U2'] },
    users: { U1: { tz: 'Europe/Paris', name: 'ana' } },
  });
  client = new webApi.WebClient(fake.token, {
    slackApiUrl: fake.apiUrl,
    retryConfig: { retries: 0 },
    logLevel: webApi.LogLevel.ERROR,
  });
});

afterEach(async () => {
  await fake.close();
});

async function raw(method: string, body: string, headers: Record<string, string>) {
  const res = await fetch(`${fake.apiUrl}${method}`, { method: 'POST', body, headers });
  return (await res.json()) as Record<string, unknown>;
}

describe('fake Slack Web API', () => {
  it('answers auth.test with the bot identity and records the bearer token', async () => {
    const res = await client.auth.test();
    expect(res).toMatchObject({
      ok: true,
      user_id: fake.botUserId,
      bot_id: fake.botId,
      team_id: fake.teamId,
    });
    expect(fake.callsOf('auth.test')[0]?.headers.authorization).toBe(`Bearer ${fake.token}`);
  });

  it('refuses a wrong or missing token and unknown methods, like Slack', async () => {
    const wrong = new webApi.WebClient('xoxb-wrong', {
      slackApiUrl: fake.apiUrl,
      logLevel: webApi.LogLevel.ERROR,
    });
    await expect(wrong.auth.test()).rejects.toMatchObject({ data: { error: 'invalid_auth' } });
    expect(await raw('auth.test', '', { 'content-type': 'application/x-www-form-urlencoded' })).toMatchObject(
      {
        ok: false,
        error: 'not_authed',
      },
    );
    await expect(client.apiCall('no.such.method')).rejects.toMatchObject({
      data: { error: 'unknown_method' },
    });
  });

  it('parses form bodies (blocks as a JSON string) and JSON bodies alike', async () => {
    await client.chat.postMessage({ channel: 'C1', text: 'hi', blocks: [{ type: 'divider' }] });
    expect(fake.callsOf('chat.postMessage')[0]?.args.blocks).toEqual([{ type: 'divider' }]);
    const res = await raw('chat.postMessage', JSON.stringify({ channel: 'C1', text: 'json' }), {
      'content-type': 'application/json; charset=utf-8',
      authorization: `Bearer ${fake.token}`,
    });
    expect(res).toMatchObject({ ok: true, channel: 'C1', message: { text: 'json', user: fake.botUserId } });
  });

  it('keeps threads as Slack shows them: replies in order, edits applied, deletions gone', async () => {
    const question = fake.userMessage({ channel: 'C1', user: 'U1', text: 'status?' });
    const a = await client.chat.postMessage({ channel: 'C1', thread_ts: question.ts, text: 'working' });
    const b = await client.chat.postMessage({ channel: 'C1', thread_ts: question.ts, text: 'card' });
    expect(Number(b.ts)).toBeGreaterThan(Number(a.ts));
    await client.chat.update({ channel: 'C1', ts: b.ts ?? '', text: 'card (approved)' });
    await client.chat.delete({ channel: 'C1', ts: a.ts ?? '' });
    await client.chat.postMessage({ channel: 'C1', text: 'elsewhere' });

    const thread = fake.thread('C1', question.ts);
    expect(thread.map((m) => m.text)).toEqual(['status?', 'card (approved)']);
    expect(thread[1]?.edited?.user).toBe(fake.botUserId);
    expect(thread[1]?.history.map((h) => h.text)).toEqual(['card']);
    await expect(client.chat.update({ channel: 'C1', ts: question.ts, text: 'x' })).rejects.toMatchObject({
      data: { error: 'cant_update_message' },
    });
  });

  it('refuses blocks past Slack limits', async () => {
    const blocks = Array.from({ length: 51 }, () => ({ type: 'divider' as const }));
    await expect(client.chat.postMessage({ channel: 'C1', text: 't', blocks })).rejects.toMatchObject({
      data: { error: 'invalid_blocks' },
    });
    const long = [{ type: 'section' as const, text: { type: 'mrkdwn' as const, text: 'x'.repeat(3_001) } }];
    await expect(client.chat.postMessage({ channel: 'C1', text: 't', blocks: long })).rejects.toMatchObject({
      data: { error: 'invalid_blocks' },
    });
    const modal = {
      type: 'modal' as const,
      title: { type: 'plain_text' as const, text: 'x' },
      blocks: [{ type: 'markdown' as const, text: 'no' }],
    };
    await expect(client.views.open({ trigger_id: '1.2.3', view: modal })).rejects.toMatchObject({
      data: { error: 'invalid_arguments' },
    });
  });

  it('scripts failures: 429 with Retry-After, { ok: false } and HTTP errors, then recovers', async () => {
    fake.failNext('chat.postMessage', 1, { kind: 'rate_limited', retryAfterSec: 7 });
    fake.failNext('chat.postMessage', 1, { kind: 'error', error: 'channel_not_found' });
    fake.failNext('chat.postMessage', 1, { kind: 'http', status: 503 });
    const res1 = await fetch(`${fake.apiUrl}chat.postMessage`, { method: 'POST', body: 'channel=C1&text=a' });
    expect([res1.status, res1.headers.get('retry-after')]).toEqual([429, '7']);
    await expect(client.chat.postMessage({ channel: 'C1', text: 'b' })).rejects.toMatchObject({
      data: { error: 'channel_not_found' },
    });
    await expect(client.chat.postMessage({ channel: 'C1', text: 'c' })).rejects.toMatchObject({
      statusCode: 503,
    });
    await expect(client.chat.postMessage({ channel: 'C1', text: 'd' })).resolves.toMatchObject({ ok: true });
    expect(fake.callsOf('chat.postMessage').map((c) => c.status)).toEqual([429, 200, 503, 200]);
  });

  it('answers the lookups loopgate makes: users, user groups, conversations, permalinks, reactions', async () => {
    expect((await client.users.info({ user: 'U1' })).user).toMatchObject({ id: 'U1', tz: 'Europe/Paris' });
    expect((await client.usergroups.users.list({ usergroup: 'S0SRE' })).users).toEqual(['U1', 'U2']);
    fake.setGroupMembers('S0SRE', ['U3']);
    expect((await client.usergroups.users.list({ usergroup: 'S0SRE' })).users).toEqual(['U3']);
    await expect(client.usergroups.users.list({ usergroup: 'S0NOPE' })).rejects.toMatchObject({
      data: { error: 'no_such_subteam' },
    });
    expect((await client.conversations.info({ channel: 'D123' })).channel).toMatchObject({ is_im: true });
    const q = fake.userMessage({ channel: 'C1', user: 'U1', text: 'q' });
    expect((await client.chat.getPermalink({ channel: 'C1', message_ts: q.ts })).permalink).toContain(
      '/archives/C1/p',
    );
    await client.reactions.add({ channel: 'C1', timestamp: q.ts, name: 'eyes' });
    await expect(
      client.reactions.add({ channel: 'C1', timestamp: q.ts, name: 'eyes' }),
    ).rejects.toMatchObject({
      data: { error: 'already_reacted' },
    });
    expect(fake.message('C1', q.ts)?.reactions).toEqual([{ name: 'eyes', users: [fake.botUserId] }]);
    await client.assistant.threads.setStatus({ channel_id: 'D1', thread_ts: q.ts, status: 'Thinking…' });
    expect(fake.assistantStatus('D1', q.ts)).toBe('Thinking…');
  });

  it('opens, updates and publishes views, and posts ephemerals', async () => {
    const modal = { type: 'modal' as const, title: { type: 'plain_text' as const, text: 'T' }, blocks: [] };
    const opened = await client.views.open({ trigger_id: '1.2.3', view: modal });
    const id = opened.view?.id ?? '';
    expect(fake.views.get(id)?.trigger_id).toBe('1.2.3');
    await client.views.update({ view_id: id, view: { ...modal, title: { type: 'plain_text', text: 'T2' } } });
    expect(fake.views.get(id)?.view.title).toEqual({ type: 'plain_text', text: 'T2' });
    await client.views.publish({ user_id: 'U1', view: { type: 'home', blocks: [] } });
    expect(fake.home('U1')).toEqual({ type: 'home', blocks: [] });
    await client.chat.postEphemeral({ channel: 'C1', user: 'U1', text: 'only you' });
    expect(fake.ephemerals('C1').map((e) => [e.user, e.text])).toEqual([['U1', 'only you']]);
  });

  it('waits for a call that has not happened yet', async () => {
    const waiting = fake.waitForCall('chat.postMessage', (c) => c.args.text === 'later', 2_000);
    setTimeout(() => void client.chat.postMessage({ channel: 'C1', text: 'later' }), 50);
    expect((await waiting).args.channel).toBe('C1');
    await expect(fake.waitForCall('chat.delete', undefined, 50)).rejects.toThrow(/no chat.delete call/);
  });
});
