/**
 * The incident storm (issue 15): many people ask within a few seconds, each answer takes 3 model calls
 * of 1 s (two rounds of a cheap read tool, then the answer). loopgate's real processes (`npm run bot`
 * and worker processes with their defaults) answer through the fake Slack Web API and a fake OpenAI over
 * HTTP, on the local Redis. Prints, asserts nothing:
 * answered, time from the first question to the last answer, p50 / p95 time to answer, repeated model
 * calls (a step of a run asked twice at the fake OpenAI), stalled jobs (worker logs), edits of a
 * placeholder after its deletion, peak RSS of each worker.
 *
 * Goals on one worker process with defaults, 300 questions in 5 s: all answered within 10 s of the first,
 * p95 <= 4.5 s, zero repeats, zero stalls, peak RSS <= 400 MB. Then 3,000 questions in 30 s across 4
 * workers on a local Redis Cluster of 3 primaries (started from redis-server, as the cluster tests do;
 * every process connects with REDIS_CLUSTER_NODES).
 *
 *   npx tsx bench/incident-storm.ts                  # both scenarios
 *   npx tsx bench/incident-storm.ts 300 5000 1       # questions, over ms, workers [KEY=VALUE worker env...]
 *   STORM_CLUSTER=1 npx tsx bench/incident-storm.ts 300 5000 1   # the same on a local cluster
 */
import { type LocalCluster, startLocalCluster } from '../test/support/redis-cluster.js';
import { percentile, type StormFigures, startStorm } from '../test/support/storm.js';

interface Scenario {
  questions: number;
  overMs: number;
  workers: number;
  workerEnv: Record<string, string>;
  /** Run every process against a local Redis Cluster of 3 primaries instead of the local Redis. */
  cluster?: boolean;
}

const MODEL_DELAY_MS = 1_000;

function print(s: Scenario, f: StormFigures) {
  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
  const env = Object.entries(s.workerEnv)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  console.log(
    `storm: ${s.questions} questions in ${s.overMs / 1000} s, ${s.workers} worker process(es)` +
      `${env ? ` with ${env}` : ' with defaults'}, 3 model calls of ${MODEL_DELAY_MS} ms each` +
      `${s.cluster ? ', on a local Redis Cluster of 3 primaries' : ''}`,
  );
  console.log(`  answered: ${f.answered}/${f.asked}`);
  console.log(`  time to last answer from the first question: ${(f.lastAnswerAfterMs / 1000).toFixed(2)} s`);
  console.log(
    `  time to answer: p50 ${(percentile(f.timesToAnswer, 50) / 1000).toFixed(2)} s  p95 ${(percentile(f.timesToAnswer, 95) / 1000).toFixed(2)} s  max ${(percentile(f.timesToAnswer, 100) / 1000).toFixed(2)} s`,
  );
  console.log(
    `  model requests: ${f.modelRequests} (repeated: ${f.repeatedModelCalls}), most in flight at once: ${f.peakModelInFlight}`,
  );
  console.log(
    `  stalled jobs: ${f.stalls}, lock/lease renewal failures logged: ${f.lockRenewalFailures}, load gate closed: ${f.gateClosings} time(s)`,
  );
  console.log(
    `  placeholder edits after its deletion: ${f.editsAfterDelete}, chat.update message_not_found: ${f.editsNotFound}`,
  );
  console.log(`  peak RSS per worker: ${f.peakRssBytes.map(mb).join(', ')}`);
}

/** Median of each gap of the questions' timelines: sent → 👀 → model calls → answer. */
function printTimelines(lines: number[][]) {
  const width = Math.max(...lines.map((l) => l.length));
  const gaps: string[] = [];
  for (let i = 1; i < width; i++) {
    const d = lines.flatMap((l) => (l.length === width ? [l[i]! - l[i - 1]!] : []));
    gaps.push(`${percentile(d, 50).toFixed(0)}/${percentile(d, 95).toFixed(0)}`);
  }
  console.log(`  timeline gaps p50/p95 ms (sent, eyes, model req/reply..., answer): ${gaps.join('  ')}`);
}

async function runScenario(s: Scenario): Promise<void> {
  const cluster: LocalCluster | null = s.cluster ? await startLocalCluster({ masters: 3 }) : null;
  const storm = await startStorm({
    workers: s.workers,
    modelDelayMs: MODEL_DELAY_MS,
    workerEnv: s.workerEnv,
    ...(cluster ? { clusterSeeds: cluster.seeds } : {}),
  }).catch(async (error: unknown) => {
    await cluster?.stop();
    throw error;
  });
  try {
    const cpuBefore = storm.cpuMs();
    // With a preload that profiles on SIGUSR2 (see the bench's notes), profile the storm alone.
    if (process.env.STORM_PROFILE) for (const pid of storm.workerPids) process.kill(pid, 'SIGUSR2');
    await storm.ask(s.questions, s.overMs);
    // Until every question is answered, or nothing more was answered for 30 s.
    let last = -1;
    let lastChange = Date.now();
    for (;;) {
      const answered = storm.answeredCount();
      if (answered !== last) {
        last = answered;
        lastChange = Date.now();
      }
      if (answered >= s.questions || Date.now() - lastChange > 30_000) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Late stalls or repeats would show within a stall interval: wait a little longer before judging.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    storm.readPeakRss();
    const cpuAfter = storm.cpuMs();
    if (process.env.STORM_PROFILE) for (const pid of storm.workerPids) process.kill(pid, 'SIGUSR2');
    print(s, storm.figures());
    const perRun = (before: number, after: number) => ((after - before) / s.questions).toFixed(1);
    console.log(
      `  CPU per question: bot ${perRun(cpuBefore.bot, cpuAfter.bot)} ms, workers ${cpuAfter.workers
        .map((w, i) => perRun(cpuBefore.workers[i]!, w))
        .join(', ')} ms (of the storm, over all its questions)`,
    );
    if (process.env.STORM_TIMELINE) printTimelines(storm.timelines());
    if (process.env.STORM_GRACEFUL) {
      for (const w of storm.workers) w.signal('SIGTERM');
      await Promise.all(storm.workers.map((w) => w.exit));
    }
  } catch (error) {
    console.error(storm.diagnostics());
    throw error;
  } finally {
    await storm.close();
    await cluster?.stop();
  }
}

const [questions, overMs, workers, ...envArgs] = process.argv.slice(2);
if (questions !== undefined) {
  await runScenario({
    questions: Number(questions),
    overMs: Number(overMs ?? 5_000),
    workers: Number(workers ?? 1),
    workerEnv: Object.fromEntries(envArgs.map((kv) => kv.split('=', 2) as [string, string])),
    cluster: process.env.STORM_CLUSTER === '1',
  });
} else {
  await runScenario({ questions: 300, overMs: 5_000, workers: 1, workerEnv: {} });
  // Ten times the people, over six times as long (the bot and the fakes share this machine's cores).
  await runScenario({ questions: 3_000, overMs: 30_000, workers: 4, workerEnv: {}, cluster: true });
}
