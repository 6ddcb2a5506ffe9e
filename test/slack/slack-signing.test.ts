import type { AddressInfo } from 'node:net';
import { App, LogLevel, verifySlackRequest } from '@slack/bolt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import {
  appMentionEvent,
  blockActionsPayload,
  directMessageEvent,
  eventBody,
  eventEnvelope,
  interactivityBody,
  nowSeconds,
  postSigned,
  signedHeaders,
  slashCommandBody,
  TEST_SIGNING_SECRET,
  threadReplyEvent,
  viewSubmissionPayload,
} from '../fakes/slack-signing.js';

describe('signing, checked by Bolt’s own verifier', () => {
  const body = JSON.stringify({
    type: 'event_callback',
    event: { type: 'app_mention', text: 'hé <@U1> & co' },
  });

  function verify(opts: { secret?: string; timestamp?: number; signature?: string; now?: number }) {
    const timestamp = opts.timestamp ?? nowSeconds();
    const headers = signedHeaders(opts.secret ?? TEST_SIGNING_SECRET, body, timestamp);
    verifySlackRequest({
      signingSecret: TEST_SIGNING_SECRET,
      body,
      headers: {
        'x-slack-signature': opts.signature ?? headers['X-Slack-Signature'],
        'x-slack-request-timestamp': Number(headers['X-Slack-Request-Timestamp']),
      },
      ...(opts.now === undefined ? {} : { nowMilliseconds: opts.now }),
    });
  }

  it('accepts a request signed with the secret', () => {
    expect(() => verify({})).not.toThrow();
  });

  it('refuses a forged signature and a stale timestamp', () => {
    expect(() => verify({ secret: 'wrong-secret' })).toThrow(/signature mismatch/);
    expect(() => verify({ signature: 'v0=00' })).toThrow(/signature mismatch/);
    expect(() => verify({ timestamp: nowSeconds() - 6 * 60 })).toThrow(/stale/);
  });
});

describe('signed requests through a real Bolt app', () => {
  let fake: FakeSlack;
  let app: App;
  let url: string;
  const seen: { kind: string; body: Record<string, unknown>; retryNum?: number }[] = [];

  beforeEach(async () => {
    seen.length = 0;
    fake = await startFakeSlack();
    app = new App({
      token: fake.token,
      signingSecret: TEST_SIGNING_SECRET,
      clientOptions: { slackApiUrl: fake.apiUrl },
      logLevel: LogLevel.ERROR,
    });
    app.event('app_mention', async ({ event, context }) => {
      seen.push({
        kind: 'app_mention',
        body: event as unknown as Record<string, unknown>,
        retryNum: context.retryNum,
      });
    });
    app.message(async ({ message }) => {
      seen.push({ kind: 'message', body: message as unknown as Record<string, unknown> });
    });
    app.action('loopgate_approve', async ({ ack, body }) => {
      await ack();
      seen.push({ kind: 'action', body: body as unknown as Record<string, unknown> });
    });
    app.view('loopgate_reject_reason', async ({ ack, view }) => {
      await ack();
      seen.push({ kind: 'view', body: view as unknown as Record<string, unknown> });
    });
    app.command('/loopgate', async ({ ack, command }) => {
      await ack();
      seen.push({ kind: 'command', body: command as unknown as Record<string, unknown> });
    });
    const server = await app.start({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  });

  afterEach(async () => {
    await app.stop();
    await fake.close();
  });

  /** Waits up to 10 s (a loaded machine) for `count` requests to have reached their listeners. */
  async function until(count: number) {
    for (let i = 0; i < 500 && seen.length < count; i++) await new Promise((r) => setTimeout(r, 20));
    return seen;
  }

  it('routes events (mention, DM, thread reply) and passes Slack’s retry number', async () => {
    const mention = appMentionEvent(fake, { channel: 'C1', user: 'U1', text: `<@${fake.botUserId}> hi` });
    const res = await postSigned(url, { ...eventBody(eventEnvelope(fake, mention)), retryNum: 1 });
    expect(res.status).toBe(200);
    await postSigned(
      url,
      eventBody(eventEnvelope(fake, directMessageEvent(fake, { channel: 'D1', user: 'U1', text: 'dm' }))),
    );
    await postSigned(
      url,
      eventBody(
        eventEnvelope(
          fake,
          threadReplyEvent(fake, { channel: 'C1', user: 'U1', text: 'more', threadTs: '1.000001' }),
        ),
      ),
    );
    const events = await until(3);
    expect(events.find((e) => e.kind === 'app_mention')).toMatchObject({ body: { user: 'U1' }, retryNum: 1 });
    expect(events.filter((e) => e.kind === 'message').map((e) => e.body.text)).toEqual(
      expect.arrayContaining(['dm', 'more']),
    );
    expect(fake.callsOf('auth.test').length).toBeGreaterThan(0);
  });

  it('routes a button click, a modal submission and a slash command sent as form bodies', async () => {
    const click = blockActionsPayload(fake, {
      user: 'U2',
      channel: 'C1',
      messageTs: '1.000002',
      action: { actionId: 'loopgate_approve', value: 'apr_1' },
    });
    const clickRes = await postSigned(url, interactivityBody(click));
    expect(clickRes.status).toBe(200);
    const submission = viewSubmissionPayload(fake, {
      user: 'U2',
      callbackId: 'loopgate_reject_reason',
      privateMetadata: '{"approvalId":"apr_1"}',
      values: { reason: { reason: { type: 'plain_text_input', value: 'no & <never>' } } },
    });
    expect((await postSigned(url, interactivityBody(submission))).status).toBe(200);
    const command = slashCommandBody(fake, { user: 'U2', channel: 'C1', text: 'status' });
    expect((await postSigned(url, command)).status).toBe(200);

    const all = await until(3);
    expect(all.find((e) => e.kind === 'action')?.body).toMatchObject({
      actions: [{ action_id: 'loopgate_approve', value: 'apr_1' }],
      container: { message_ts: '1.000002', channel_id: 'C1' },
      user: { id: 'U2' },
    });
    expect(all.find((e) => e.kind === 'view')?.body).toMatchObject({
      private_metadata: '{"approvalId":"apr_1"}',
      state: { values: { reason: { reason: { value: 'no & <never>' } } } },
    });
    expect(all.find((e) => e.kind === 'command')?.body).toMatchObject({
      command: '/loopgate',
      text: 'status',
    });
  });

  it('is refused by Bolt with a forged signature or a stale timestamp, and nothing runs', async () => {
    const envelope = eventEnvelope(fake, appMentionEvent(fake, { channel: 'C1', user: 'U1', text: 'x' }));
    const forged = await postSigned(url, { ...eventBody(envelope), secret: 'not-the-secret' });
    const stale = await postSigned(url, { ...eventBody(envelope), timestamp: nowSeconds() - 6 * 60 });
    expect([forged.status, stale.status]).toEqual([401, 401]);
    // A signed event sent after them reaches its listener alone: the refused ones never ran.
    const signed = appMentionEvent(fake, { channel: 'C1', user: 'U1', text: 'signed' });
    expect((await postSigned(url, eventBody(eventEnvelope(fake, signed)))).status).toBe(200);
    const events = await until(1);
    expect(events.map((e) => e.body.text)).toEqual(['signed']);
  });
});
