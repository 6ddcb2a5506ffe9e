/**
 * End to end with real processes (`npm run bot` and a `npm run worker`), the fake Slack, two fake
 * OpenAI servers (the primary and a `model.fallbacks` entry) and a local HTTP service: a read whose
 * service answers 503 twice is retried and answers once; an approved write answered 503 is not repeated,
 * its card offers Retry, and a double click runs it once more, once; a reply cut off at the token limit
 * is told as such; a primary model answering 500s is replaced by the fallback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { askToDeploy, NOT_DEPLOYED, postedWith, toolResultsSeen } from './support/deploy-case.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { scrape } from './support/prom-text.js';
import { buttonsOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  // One SDK retry keeps the primary's outage short; the engine's own retries are what is tested.
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    fallback: true,
    // Short, so a write whose service hangs times out quickly.
    httpRequestTimeoutSeconds: 1,
    workerEnv: { OPENAI_MAX_RETRIES: '1' },
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

/** The bot's messages in a thread whose words include `text`. */
const said = (channel: string, threadTs: string, text: string) =>
  w.slack.thread(channel, threadTs).filter((m) => m.bot_id && wordsOf(m).includes(text));

describe('retries, cut-off replies and model fallbacks (real bot and worker)', { timeout: 90_000 }, () => {
  it('a read whose service fails twice with 503 is tried 3 times and gives one result, listing the attempts', async () => {
    const tag = 'read-503';
    const url = w.statusUrl('fail-twice-payments');
    w.model.brain(
      tag,
      callThenAnswer('http_get', { url }, (r) => (succeeded(r) ? 'Payments is up.' : 'Payments is down.')),
    );
    const channel = w.newChannel();
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged(tag, 'is payments up?'));
    const run = await w.ended(asked.runId);

    expect(w.hits(url)).toHaveLength(3);
    const results = toolResultsSeen(w, tag);
    expect(results).toHaveLength(1);
    const result = JSON.parse(results[0] ?? '{}');
    expect(result).toMatchObject({ ok: true, attempts: [{ attempt: 1 }, { attempt: 2 }] });
    expect(result.attempts[0].message).toContain('answered 503: warming up');
    expect(said(channel, asked.threadTs, 'Payments is up.')).toHaveLength(1);
    const retried = (await w.store.runs.readTrace(run.state.runId)).filter((e) => e.type === 'tool_retried');
    expect(retried.map((e) => [e.attempt, e.code, typeof e.delayMs])).toEqual([
      [1, 'http_status', 'number'],
      [2, 'http_status', 'number'],
    ]);
  });

  it('an approved write answered 503 is not repeated; Retry on its card runs it once more, even when double-clicked', async () => {
    const c = await askToDeploy(w, '503-first-deploy');
    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    await w.ended(c.asked.runId);
    expect(w.hits(c.url)).toHaveLength(1);
    const [seen] = toolResultsSeen(w, c.tag);
    expect(JSON.parse(seen ?? '{}')).toMatchObject({
      ok: false,
      error: {
        code: 'http_status',
        transient: true,
        message: expect.stringMatching(
          /answered 503[\s\S]*not retried because it may not be safe to repeat$/,
        ),
      },
    });
    expect(postedWith(w, c, NOT_DEPLOYED)).toHaveLength(1);

    const card = await w.waitFor('the card to offer Retry', () => {
      const message = w.message(c.card);
      return buttonsOf(message.blocks).some((b) => b.actionId === ACTION_IDS.reapprove) ? message : null;
    });
    expect(wordsOf(card)).toContain('Failed, not repeated');
    expect(buttonsOf(card.blocks).find((b) => b.actionId === ACTION_IDS.reapprove)?.text).toBe('Retry');
    // Still nothing repeated by itself.
    expect(w.hits(c.url)).toHaveLength(1);

    await Promise.all([
      w.click(card, PEOPLE.manager, ACTION_IDS.reapprove),
      w.click(card, PEOPLE.manager, ACTION_IDS.reapprove),
    ]);
    const told = await w.waitFor('the thread to hear how the retry went', () => {
      const found = postedWith(w, c, 'Ran `http_request` again');
      return found.length > 0 ? found : null;
    });
    expect(wordsOf(told[0]!)).toContain(`approved again by <@${PEOPLE.manager}>: it succeeded`);
    await w.waitFor(
      'the second click to be told',
      () => w.ephemeralsTo(PEOPLE.manager, c.channel).length > 0,
    );
    expect(w.ephemeralsTo(PEOPLE.manager, c.channel)[0]?.text).toContain('already approved again');
    expect(w.hits(c.url)).toHaveLength(2);
    expect(postedWith(w, c, 'Ran `http_request` again')).toHaveLength(1);
    await w.waitFor('the card to show the result', () =>
      wordsOf(w.message(c.card)).includes('Ran again: succeeded.'),
    );
    expect(buttonsOf(w.message(c.card).blocks).map((b) => b.actionId)).toEqual([ACTION_IDS.details]);
  });

  it('an approved write that times out is not repeated either; Retry runs it once more', async () => {
    const c = await askToDeploy(w, 'slow-first-deploy');
    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    await w.ended(c.asked.runId);
    expect(w.hits(c.url)).toHaveLength(1);
    expect(JSON.parse(toolResultsSeen(w, c.tag)[0] ?? '{}')).toMatchObject({
      ok: false,
      error: {
        transient: true,
        message: expect.stringContaining('not retried because it may not be safe to repeat'),
      },
    });
    const card = await w.waitFor('the card to offer Retry', () => {
      const message = w.message(c.card);
      return buttonsOf(message.blocks).some((b) => b.actionId === ACTION_IDS.reapprove) ? message : null;
    });
    await w.click(card, PEOPLE.sreA, ACTION_IDS.reapprove);
    await w.waitFor('the retry to be told', () => postedWith(w, c, 'Ran `http_request` again').length > 0);
    expect(w.hits(c.url)).toHaveLength(2);
  });

  it('a reply cut off at the token limit twice: the person is told it was cut off, not that it was empty', async () => {
    const tag = 'cut-off';
    w.model.brain(tag, () => ({ content: 'The incident began when', finishReason: 'length' }));
    const channel = w.newChannel();
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged(tag, 'write the whole postmortem'));
    const run = await w.ended(asked.runId);
    expect(run.state.stopReason).toBe('output_limit');
    expect(w.model.requestsOf(tag)).toHaveLength(2);
    const posted = said(channel, asked.threadTs, "cut off at the model's output token limit");
    expect(posted).toHaveLength(1);
    expect(wordsOf(posted[0]!)).not.toMatch(/empty|plain text|\[loopgate\]/);
  });

  it('a primary model answering 500s is replaced by the fallback; the trace and metrics name it', async () => {
    const tag = 'fallback';
    w.model.brain(tag, () => ({ status: 500, body: { error: { message: 'primary is down' } } }));
    w.fallbackModel?.brain(tag, () => ({ content: 'Answered by the fallback model.' }));
    const channel = w.newChannel();
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged(tag, 'are you there?'));
    const run = await w.ended(asked.runId);
    expect(run.state.stopReason).toBe('completed');
    // The SDK's one retry, then the fallback.
    expect(w.model.requestsOf(tag)).toHaveLength(2);
    expect(w.fallbackModel?.requestsOf(tag).map((r) => r.body.model)).toEqual(['fallback-model']);
    expect(said(channel, asked.threadTs, 'Answered by the fallback model.')).toHaveLength(1);
    const replied = (await w.store.runs.readTrace(run.state.runId)).filter((e) => e.type === 'model_replied');
    expect(replied.map((e) => e.model)).toEqual(['fallback-model']);
    const metrics = await scrape(w.workerMetricsUrls[0]!);
    expect(metrics).toMatch(/loopgate_model_replies_total\{model="fallback-model"\} [1-9]/);
  });
});
