/**
 * Answering at Slack's pace (issue 24): a storm of questions against a fake Slack that enforces Slack's
 * documented rate limits (test/fakes/slack-rate-limits.ts: chat.postMessage about 1/s per channel,
 * Tier 2 about 20/min, Tier 3 about 50/min, Tier 4 about 100/min, 429 with Retry-After beyond them).
 * loopgate's real processes (bots and workers with their defaults) share one Slack rate budget in Redis.
 * Each question takes one read step and an answer (two model calls of 0.5 s); every 10th asks for an
 * approval instead (a gated post_message: an approval card in the same storm). Prints, asserts nothing:
 * answered, last answer vs the floor of the path used (one post per answer per channel at the channel's
 * rate), p50 / p95 time to answer, 429 responses and their share of calls (by method), approval cards'
 * p95 post latency (from the model's reply asking for the call to the card in Slack).
 *
 * Goals: every question answered, last answer within 1.15x the floor, 429s under 5 % of calls, cards
 * within 2 s p95.
 *
 *   npx tsx bench/slack-pace.ts                      # the three scenarios below
 *   npx tsx bench/slack-pace.ts 60 5000 1 1 1        # questions, over ms, channels, workers, bots
 */
import { percentile, startStorm } from '../test/support/storm.js';

interface Scenario {
  questions: number;
  overMs: number;
  channels: number;
  workers: number;
  bots: number;
}

const MODEL_DELAY_MS = 500;
const APPROVAL_EVERY = 10;
/** Seconds between two posts in one channel (policy slack.rateLimits.postsPerMinutePerChannel: 60). */
const POST_INTERVAL_S = 1;

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function runScenario(sc: Scenario): Promise<void> {
  const storm = await startStorm({
    workers: sc.workers,
    bots: sc.bots,
    channels: sc.channels,
    callsPerRun: 2,
    modelDelayMs: MODEL_DELAY_MS,
    slackRateLimits: true,
    approvalEvery: APPROVAL_EVERY,
  });
  try {
    await storm.ask(sc.questions, sc.overMs);
    const expected = sc.questions - Math.ceil(sc.questions / APPROVAL_EVERY);
    let last = -1;
    let lastChange = Date.now();
    for (;;) {
      const answered = storm.answeredCount();
      if (answered !== last) {
        last = answered;
        lastChange = Date.now();
      }
      if (answered >= expected || Date.now() - lastChange > 60_000) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // Decorations still draining and late 429s would show within a few seconds.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const f = storm.figures();
    // The floor: the busiest channel's answers and cards, one post a second, after the first question.
    const perChannel = Math.ceil(sc.questions / sc.channels);
    const floorMs = Math.max(perChannel * POST_INTERVAL_S * 1000, sc.overMs + 2 * MODEL_DELAY_MS);
    let calls = 0;
    let limited = 0;
    const byMethod: string[] = [];
    for (const [method, c] of [...f.slackCalls].sort((a, b) => b[1].calls - a[1].calls)) {
      calls += c.calls;
      limited += c.rateLimited;
      byMethod.push(`${method} ${c.calls}${c.rateLimited ? ` (429: ${c.rateLimited})` : ''}`);
    }
    console.log(
      `slack pace: ${sc.questions} questions in ${sc.overMs / 1000} s over ${sc.channels} channel(s), ` +
        `${sc.workers} worker(s), ${sc.bots} bot(s); Slack's documented limits enforced`,
    );
    console.log(`  answered: ${f.answered}/${expected} (and ${f.approvalsAsked} approval questions)`);
    console.log(
      `  last answer after the first question: ${s(f.lastAnswerAfterMs)}; floor ${s(floorMs)} ` +
        `(${perChannel} posts in the busiest channel at 1/s): ${(f.lastAnswerAfterMs / floorMs).toFixed(2)}x`,
    );
    console.log(
      `  time to answer: p50 ${s(percentile(f.timesToAnswer, 50))}  p95 ${s(percentile(f.timesToAnswer, 95))}  max ${s(percentile(f.timesToAnswer, 100))}`,
    );
    console.log(
      `  429 responses: ${limited} of ${calls} Slack calls (${((100 * limited) / Math.max(1, calls)).toFixed(2)} %)`,
    );
    console.log(`  calls by method: ${byMethod.join(', ')}`);
    console.log(
      `  approval cards: ${f.cardLatencies.length}/${f.approvalsAsked} posted, latency p50 ${s(percentile(f.cardLatencies, 50))}  p95 ${s(percentile(f.cardLatencies, 95))}`,
    );
    const dropped = storm.workers
      .flatMap((w) => w.logs())
      .filter((l) => l.msg.startsWith("dropped a thread's decorations")).length;
    console.log(`  threads whose decorations were dropped (log lines): ${dropped}`);
  } catch (error) {
    console.error(storm.diagnostics());
    throw error;
  } finally {
    await storm.close();
  }
}

const [questions, overMs, channels, workers, bots] = process.argv.slice(2);
if (questions !== undefined) {
  await runScenario({
    questions: Number(questions),
    overMs: Number(overMs ?? 5_000),
    channels: Number(channels ?? 1),
    workers: Number(workers ?? 1),
    bots: Number(bots ?? 1),
  });
} else {
  await runScenario({ questions: 60, overMs: 5_000, channels: 1, workers: 1, bots: 1 });
  await runScenario({ questions: 60, overMs: 5_000, channels: 10, workers: 1, bots: 1 });
  await runScenario({ questions: 60, overMs: 5_000, channels: 1, workers: 2, bots: 2 });
}
