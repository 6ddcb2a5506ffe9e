/**
 * Clicks on an answer's feedback buttons through the real bot: recorded once per person and run, a
 * comment modal that stores its comment, refusals for other conversations and gone runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedbackValue } from '../../src/slack/final-answer.js';
import { ACTION_IDS, CALLBACK_IDS, FEEDBACK_COMMENT_INPUT } from '../../src/slack/ids.js';
import { interactivityBody, viewSubmissionPayload } from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, MANAGER, REQUESTER, startBotFixture } from './bot-fixture.js';

let f: BotFixture;
beforeAll(async () => {
  f = await startBotFixture();
}, 30_000);
afterAll(async () => {
  await f?.cleanup();
});

const clickFeedback = async (
  p: { runId: string; threadTs: string; cardTs: string },
  user: string,
  value: 'good' | 'bad',
  triggerId: string,
  channel = CHANNEL,
) => {
  const res = await f.click({
    user,
    channel,
    messageTs: p.cardTs,
    threadTs: p.threadTs,
    action: { actionId: ACTION_IDS.feedback, value: feedbackValue(value, p.runId) },
    triggerId,
  });
  expect(res.status).toBe(200);
  await f.bot.idle();
};

describe('feedback clicks', () => {
  it('records the first click, opens the comment modal, and stores the comment submitted', async () => {
    const p = await f.pendingApproval();
    await clickFeedback(p, MANAGER, 'bad', 'trig-fb-1');
    expect(await f.store.feedback.forRun(p.runId)).toEqual([
      { runId: p.runId, userId: MANAGER, value: 'bad', at: expect.any(Number), channelId: CHANNEL },
    ]);
    const opened = await f.fake.waitForCall('views.open', (c) => c.args.trigger_id === 'trig-fb-1');
    const view = opened.args.view as { callback_id: string; private_metadata: string };
    expect(view.callback_id).toBe(CALLBACK_IDS.feedbackComment);

    const res = await f.post(
      interactivityBody(
        viewSubmissionPayload(f.id, {
          user: MANAGER,
          callbackId: CALLBACK_IDS.feedbackComment,
          privateMetadata: view.private_metadata,
          values: {
            [FEEDBACK_COMMENT_INPUT.blockId]: {
              [FEEDBACK_COMMENT_INPUT.actionId]: {
                type: 'plain_text_input',
                value: ' it looked at the wrong region ',
              },
            },
          },
        }),
      ),
    );
    expect(res.status).toBe(200);
    expect((await f.store.feedback.forRun(p.runId))[0]).toMatchObject({
      value: 'bad',
      comment: 'it looked at the wrong region',
    });
  });

  it('a second click by the same person (either button) changes nothing and says so; others count', async () => {
    const p = await f.pendingApproval();
    await clickFeedback(p, REQUESTER, 'good', 'trig-fb-2');
    await clickFeedback(p, REQUESTER, 'bad', 'trig-fb-3');
    await clickFeedback(p, MANAGER, 'bad', 'trig-fb-4');
    expect((await f.store.feedback.forRun(p.runId)).map((r) => `${r.userId}:${r.value}`)).toEqual([
      `${REQUESTER}:good`,
      `${MANAGER}:bad`,
    ]);
    const notes = f.fake
      .ephemerals(CHANNEL)
      .filter((e) => e.user === REQUESTER && e.text.includes('already gave'));
    expect(notes).toHaveLength(1);
    expect(
      f.fake.calls.filter((c) => c.method === 'views.open' && c.args.trigger_id === 'trig-fb-3'),
    ).toEqual([]);
  });

  it('ignores buttons of another conversation and of runs that are gone', async () => {
    const p = await f.pendingApproval();
    await clickFeedback(p, MANAGER, 'good', 'trig-fb-5', 'C0ELSEWHERE');
    expect(await f.store.feedback.forRun(p.runId)).toEqual([]);
    await clickFeedback({ ...p, runId: 'r-gone1234' }, MANAGER, 'good', 'trig-fb-6');
    expect(f.fake.ephemerals(CHANNEL).some((e) => e.user === MANAGER && e.text.includes('any more'))).toBe(
      true,
    );
  });
});
