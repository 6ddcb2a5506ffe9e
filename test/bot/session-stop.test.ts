/**
 * The agent session's stop button (`agent_session_stopped`) through the real bot: the run working in the
 * thread is cancelled durably (the same record, announcement and job as `/loopgate cancel`), once, and
 * only by someone who may cancel it.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANNOT_STOP_TEXT } from '../../src/bot/session-stop.js';
import { cancelJobId } from '../../src/queue/job-ids.js';
import {
  type BotFixture,
  CHANNEL,
  MANAGER,
  REDIS_URL,
  REQUESTER,
  STRANGER,
  startBotFixture,
} from './bot-fixture.js';

let f: BotFixture;
let subscriber: Redis;
const announced: string[] = [];
beforeAll(async () => {
  f = await startBotFixture();
  subscriber = new Redis(REDIS_URL);
  subscriber.on('message', (_channel: string, runId: string) => announced.push(runId));
  await subscriber.subscribe(f.store.context.keys.cancels);
}, 30_000);
afterAll(async () => {
  await subscriber?.quit();
  await f?.cleanup();
});

const stopEvent = (threadTs: string, user: string, channel = CHANNEL) => ({
  type: 'agent_session_stopped',
  channel,
  thread_ts: threadTs,
  user,
  streaming_message_ts: [],
  event_ts: `${Math.floor(Date.now() / 1000)}.000100`,
});

const waitFor = async (what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 5_000) => {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('agent_session_stopped', () => {
  it("the requester's stop records the cancel, announces it and queues one cancel job; redeliveries change nothing", async () => {
    const p = await f.pendingApproval();
    const { res, eventId } = await f.sendEvent(stopEvent(p.threadTs, REQUESTER));
    expect(res.status).toBe(200);
    const first = (await f.store.runs.loadRun(p.runId))?.cancelRequest;
    expect(first).toMatchObject({ by: REQUESTER });
    const job = await f.queue.getJob(cancelJobId(p.runId));
    expect(job?.data).toMatchObject({ runId: p.runId, by: REQUESTER });
    await waitFor('the announcement', () => announced.includes(p.runId));

    // Slack's redelivery of the same event, then a stop by an approver: the first request is kept.
    expect((await f.sendEvent(stopEvent(p.threadTs, REQUESTER), { eventId, retryNum: 1 })).res.status).toBe(
      200,
    );
    expect((await f.sendEvent(stopEvent(p.threadTs, MANAGER))).res.status).toBe(200);
    expect((await f.store.runs.loadRun(p.runId))?.cancelRequest).toEqual(first);
    const cancels = (await f.jobs()).filter((j) => j.name === 'cancel' && j.data.runId === p.runId);
    expect(cancels).toHaveLength(1);
  });

  it('an approver who is a member of the conversation may stop it too', async () => {
    const p = await f.pendingApproval();
    await f.sendEvent(stopEvent(p.threadTs, MANAGER));
    expect((await f.store.runs.loadRun(p.runId))?.cancelRequest).toMatchObject({ by: MANAGER });
  });

  it('anyone else is told, once, and the run goes on', async () => {
    const p = await f.pendingApproval();
    const { eventId } = await f.sendEvent(stopEvent(p.threadTs, STRANGER));
    await f.sendEvent(stopEvent(p.threadTs, STRANGER), { eventId, retryNum: 1 });
    expect((await f.store.runs.loadRun(p.runId))?.cancelRequest).toBeNull();
    expect(await f.queue.getJob(cancelJobId(p.runId))).toBeUndefined();
    const notes = f.fake
      .ephemerals(CHANNEL)
      .filter((e) => e.user === STRANGER && e.text === CANNOT_STOP_TEXT);
    expect(notes).toHaveLength(1);
  });

  it('a thread where no run works: acked, nothing recorded', async () => {
    const threadTs = await f.threadWithHistory();
    const cancelJobs = async () => (await f.jobs()).filter((j) => j.name === 'cancel').length;
    const before = await cancelJobs();
    const { res } = await f.sendEvent(stopEvent(threadTs, REQUESTER));
    expect(res.status).toBe(200);
    expect(await cancelJobs()).toBe(before);
  });

  it('an unreadable event is acked and ignored', async () => {
    const { res } = await f.sendEvent({ type: 'agent_session_stopped', channel: CHANNEL });
    expect(res.status).toBe(200);
  });
});
