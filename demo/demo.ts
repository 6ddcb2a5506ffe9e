/**
 * `npm run demo`: loopgate end to end on a laptop, with Redis and nothing else (no Slack app, no model
 * key). It starts the real bot and worker processes against a stand-in Slack Web API and a scripted
 * model, and plays an on-call story in a channel: Alice asks why payments is slow; the model reads the
 * service's health endpoint and the runbooks, then proposes a restart, which waits for approval; Bob's
 * click is refused, the manager approves, the restart runs once and is verified, and the answer comes.
 * Then it prints the thread as Slack shows it and the run's trace, cleans up and exits 0; any failure or
 * a run-through longer than 60 s exits 1 with the reason.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ACTION_IDS } from '../src/slack/ids.js';
import { runIdForEvent } from '../src/store/ids.js';
import type { Store } from '../src/store/index.js';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { pendingApprovalId } from './lib/cards.js';
import { DemoError } from './lib/errors.js';
import { writeDemoPolicy } from './lib/policy-file.js';
import { connectOrExplain, DEFAULT_REDIS_URL } from './lib/redis.js';
import { mrkdwnToText } from './lib/slack-text.js';
import { BOT_USER_ID, type Stage, startStage } from './lib/stage.js';
import { cardRecorded, openStageStore, printTrace } from './lib/store-view.js';
import { renderThread } from './lib/thread-view.js';
import { clickButton, mentionBot, type SentMessage } from './lib/user-actions.js';
import { waitUntil } from './lib/wait.js';
import { onCallScript } from './oncall-model.js';
import { type PaymentsService, startPaymentsService } from './payments-service.js';

const LIMIT_MS = 60_000;
const CHANNEL = 'C0ONCALL';
const ALICE = 'U0ALICE';
const BOB = 'U0BOB';
const MANAGER = 'U0MGR';
const PEOPLE = {
  [ALICE]: { name: 'alice', real_name: 'Alice (on call)' },
  [BOB]: { name: 'bob', real_name: 'Bob (developer)' },
  [MANAGER]: { name: 'manager', real_name: 'Maya (engineering manager)' },
};
const QUESTION = "payments is slow, what's going on?";

const nameOf = (id: string): string =>
  id === BOT_USER_ID ? 'loopgate' : (PEOPLE[id as keyof typeof PEOPLE]?.name ?? id);
const say = (line = '') => process.stdout.write(`${line}\n`);
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

interface Cast {
  stage: Stage;
  store: Store;
  service: PaymentsService;
}

/** The story; resolves with Alice's question once the run has ended. */
async function play({ stage, store, service }: Cast): Promise<SentMessage> {
  const alive =
    <T>(probe: () => T) =>
    () => {
      stage.checkAlive();
      return probe();
    };
  say(`▸ alice, in #oncall: "@loopgate ${QUESTION}"`);
  const asked = await mentionBot(stage, { channel: CHANNEL, user: ALICE, text: QUESTION });
  const thread = () => stage.slack.thread(CHANNEL, asked.threadTs);

  const card = await waitUntil(
    'the approval card',
    alive(() => {
      const message = thread().find((m) => pendingApprovalId(m.blocks));
      const approvalId = pendingApprovalId(message?.blocks);
      return message && approvalId ? { ts: message.ts, approvalId } : undefined;
    }),
    25_000,
  );
  await waitUntil('loopgate to record the card', () => cardRecorded(store, card.approvalId), 5_000);
  say(
    `▸ the model read the health endpoint (${service.url}/health/payments) and the runbooks, ` +
      'then proposed a restart: an approval card is in the thread',
  );

  const click = (user: string) =>
    clickButton(stage, {
      user,
      channel: CHANNEL,
      messageTs: card.ts,
      threadTs: asked.threadTs,
      actionId: ACTION_IDS.approve,
      value: card.approvalId,
      text: 'Approve',
    });
  await click(BOB);
  const refusal = await waitUntil(
    "the bot's answer to Bob's click",
    alive(() => stage.slack.ephemerals(CHANNEL).find((e) => e.user === BOB)),
    10_000,
  );
  say(`▸ bob clicks Approve → refused, only he sees: "${mrkdwnToText(refusal.text, nameOf)}"`);
  if (pendingApprovalId(stage.slack.message(CHANNEL, card.ts)?.blocks) !== card.approvalId) {
    throw new DemoError("Bob's click changed the card: it should have changed nothing");
  }
  if (service.restarts().length !== 0) throw new DemoError("the restart ran after Bob's click");

  await click(MANAGER);
  await waitUntil(
    'the card to show the decision',
    alive(() => !pendingApprovalId(stage.slack.message(CHANNEL, card.ts)?.blocks)),
    10_000,
  );
  say('▸ manager clicks Approve → the card shows the decision; the worker resumes the run');
  // The worker reacts on the question when the run has ended, after posting the answer.
  await waitUntil(
    'the final answer',
    alive(() =>
      stage.slack
        .message(CHANNEL, asked.ts)
        ?.reactions.some((r) => r.name === 'white_check_mark' || r.name === 'x'),
    ),
    25_000,
  );
  return asked;
}

/** What must hold at the end; each failure is a reason to exit 1. */
async function check({ store, service }: Cast, runId: string): Promise<void> {
  const run = await store.runs.loadRun(runId);
  if (run?.state.status !== 'completed') {
    throw new DemoError(
      `the run ended ${run?.state.status ?? 'missing'} (${run?.state.stopReason}), not completed`,
    );
  }
  const restarts = service.restarts();
  if (restarts.length !== 1) {
    throw new DemoError(`payments received ${restarts.length} restart calls; exactly 1 was expected`);
  }
  const verified = run.state.evidence.some((e) => e.kind === 'verification' && e.ok);
  if (!verified || !service.healthy()) throw new DemoError('payments is not healthy after the restart');
}

function heading(text: string): void {
  say();
  say(`═══ ${text} ${'═'.repeat(Math.max(3, 96 - text.length))}`);
  say();
}

/** What to stop, newest first; run once, whether the demo ends well, badly or out of time. */
const closers: (() => Promise<unknown>)[] = [];
let closing: Promise<void> | undefined;
const closeAll = () => {
  closing ??= (async () => {
    for (const close of closers) await close().catch(() => {});
  })();
  return closing;
};

async function main(): Promise<number> {
  const started = performance.now();
  const work = mkdtempSync(join(tmpdir(), 'loopgate-demo-'));
  const redisUrl = process.env.REDIS_URL || DEFAULT_REDIS_URL;
  let stage: Stage | undefined;
  let asked: SentMessage | undefined;
  let processesStarted = false;
  let ok = false;
  try {
    say('loopgate demo: an on-call story played against the real bot and worker processes.');
    say('Only Slack and the model are stood in (no Slack app, no model key); Redis is real.');
    say();
    const redis = await connectOrExplain(redisUrl);
    closers.push(() => redis.quit());
    const service = await startPaymentsService();
    closers.push(() => service.close());
    const model = await startFakeOpenAI(onCallScript(12));
    closers.push(() => model.close());
    const policyPath = writeDemoPolicy(work, { SERVICE_URL: service.url });

    say(`▸ starting the bot (tsx src/bot/main.ts) and a worker (tsx src/worker/main.ts)…`);
    processesStarted = true;
    stage = await startStage({
      redis,
      redisUrl,
      policyPath,
      model: { apiKey: 'demo', baseUrl: model.url, name: 'loopgate-demo-script' },
      users: PEOPLE,
      label: 'demo',
      cwd: work,
      logDir: work,
    });
    const playing = stage;
    closers.unshift(() => playing.close());
    const opened = await openStageStore(stage);
    closers.unshift(() => opened.close());
    say(
      `  ready in ${seconds(started)}: stand-in Slack ${stage.slack.apiUrl}, scripted model ${model.url}, ` +
        `payments ${service.url}, Redis ${redisUrl} under ${stage.prefix}`,
    );
    const cast: Cast = { stage, store: opened.store, service };

    asked = await play(cast);
    const runId = runIdForEvent(asked.eventId);
    await check(cast, runId);
    say(
      `▸ the restart ran once (payments received 1 restart call), its verification passed, and the ` +
        `answer is in the thread   [${seconds(started)}]`,
    );

    heading('The thread in #oncall, as Slack shows it');
    say(renderThread({ slack: stage.slack, channel: CHANNEL, threadTs: asked.threadTs, nameOf }));
    heading(`The run's trace (npx loopgate trace ${runId})`);
    if ((await printTrace(stage, runId, process.stdout)) !== 0)
      throw new DemoError('the trace could not be read');
    say();
    say(
      `✔ Demo complete in ${seconds(started)}: bob was refused, the manager approved, payments was ` +
        `restarted exactly once (${model.requests.length} model calls) and reports ok.`,
    );
    say('  Next: npm run chat, to talk to loopgate with your own model and policy in this terminal.');
    ok = true;
    return 0;
  } catch (error) {
    if (stage && asked) {
      heading('The thread so far');
      say(renderThread({ slack: stage.slack, channel: CHANNEL, threadTs: asked.threadTs, nameOf }));
    }
    const message =
      error instanceof DemoError ? error.message : String(error instanceof Error ? error.stack : error);
    process.stderr.write(`\n✘ loopgate demo failed: ${message}\n`);
    if (processesStarted) process.stderr.write(`  Logs of the bot and the worker: ${work}\n`);
    return 1;
  } finally {
    await closeAll();
    // Kept after a failure of the processes, for their logs.
    if (ok || !processesStarted) rmSync(work, { recursive: true, force: true });
  }
}

/** Ends the demo after cleaning up (bounded: a hung cleanup must not hold the terminal). */
async function end(code: number): Promise<never> {
  await Promise.race([closeAll(), new Promise((resolve) => setTimeout(resolve, 15_000).unref())]);
  process.exit(code);
}

setTimeout(() => {
  process.stderr.write(`\n✘ loopgate demo failed: it took longer than ${LIMIT_MS / 1000} s\n`);
  void end(1);
}, LIMIT_MS).unref();
process.once('SIGINT', () => void end(130));
process.once('SIGTERM', () => void end(143));
await end(await main());
