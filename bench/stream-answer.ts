/**
 * A streamed answer, model to Slack: the OpenAI adapter streaming a reply (50 tokens/s, 4 characters a
 * token) into a StreamWriter over the Web API client, as a worker does, both over the buffered fetch.
 * The fakes run in a child process (bench/_stream-fakes.ts), so the CPU measured is the worker side's.
 * Goals (issue 14): first words in Slack within 300 ms of the model's first token; Slack calls per answer
 * growing with its length divided by the buffer, not with its tokens; worker CPU per 2,000-token answer
 * <= 20 ms.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createBufferedFetch } from '../src/http/buffered-fetch.js';
import { createOpenAIModel } from '../src/loop/openai-model.js';
import type { Logger } from '../src/loop/tool-contract.js';
import { webSurfaceCalls } from '../src/slack/surfaces/agent-surfaces.js';
import { StreamWriter } from '../src/slack/surfaces/stream-writer.js';
import { createSlackWebClient } from '../src/slack/web-client.js';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const child = spawn(
  process.execPath,
  ['--import', 'tsx', fileURLToPath(new URL('./_stream-fakes.ts', import.meta.url))],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const first = await new Promise<string>((resolve) =>
  createInterface({ input: child.stdout! }).once('line', resolve),
);
const urls = JSON.parse(first) as { openai: string; slack: string; token: string };

const fetch = createBufferedFetch();
const model = createOpenAIModel({ apiKey: 'sk-bench', baseURL: urls.openai, model: 'bench', fetch });
const client = createSlackWebClient({ token: urls.token, apiUrl: urls.slack, logger, fetch });
const calls = webSurfaceCalls(client);
let thread = 0;

interface Result {
  firstWordsMs: number;
  slackCalls: number;
  cpuMs: number;
  chars: number;
}

async function answer(tokens: number, rate: number, bufferChars = 256): Promise<Result> {
  thread++;
  let firstToken = 0;
  let firstWords = 0;
  const writer = new StreamWriter({
    calls,
    channel: 'C0BENCH01',
    threadTs: `1700000000.${String(thread).padStart(6, '0')}`,
    recipient: { userId: 'U0BENCH01', teamId: 'T0BENCH01' },
    logger,
    bufferChars,
    onStarted: async () => {
      firstWords ||= performance.now();
    },
  });
  const cpu = process.cpuUsage();
  const reply = await model.complete({
    messages: [{ role: 'user', content: `tokens=${tokens} rate=${rate}` }],
    tools: [],
    signal: new AbortController().signal,
    onText: (delta) => {
      firstToken ||= performance.now();
      writer.text(delta);
    },
  });
  const sent = await writer.stop();
  const used = process.cpuUsage(cpu);
  const text = sent.map((m) => m.text).join('');
  if (text !== reply.content) throw new Error('the streamed text is not the reply');
  return {
    firstWordsMs: firstWords - firstToken,
    slackCalls: writer.calls,
    cpuMs: (used.user + used.system) / 1000,
    chars: text.length,
  };
}

const round = (n: number) => Math.round(n * 10) / 10;
try {
  await answer(20, 1000); // warm-up: connections, JIT
  const latencies: number[] = [];
  for (let i = 0; i < 7; i++) latencies.push((await answer(50, 50)).firstWordsMs);
  latencies.sort((a, b) => a - b);
  console.log(
    `first words in Slack after the model's first token (50 tok/s, 7 answers): median ${round(latencies[3]!)} ms, max ${round(latencies.at(-1)!)} ms (goal <= 300 ms)`,
  );

  console.log('Slack calls per answer (start + appends + stop):');
  for (const [tokens, rate, buffer] of [
    [100, 50, 256],
    [500, 50, 256],
    [500, 1000, 128],
    [500, 1000, 512],
    [2000, 1000, 128],
    [2000, 1000, 512],
  ] as const) {
    const r = await answer(tokens, rate, buffer);
    console.log(
      `  ${String(tokens).padStart(4)} tokens (${r.chars} chars) at ${String(rate).padStart(4)} tok/s, buffer ${String(buffer).padStart(3)}: ${r.slackCalls} calls`,
    );
  }

  const long = await answer(2000, 50);
  // What this process burns doing nothing for as long (timers, the loader): not the answer's cost.
  const idleCpu = process.cpuUsage();
  await new Promise((r) => setTimeout(r, 40_000));
  const idle = process.cpuUsage(idleCpu);
  const idleMs = (idle.user + idle.system) / 1000;
  console.log(
    `worker CPU for a 2,000-token answer streamed at 50 tok/s (adapter + writer + HTTP): ${round(long.cpuMs)} ms, of which ${round(idleMs)} ms the idle process burns in 40 s; ${round(long.cpuMs - idleMs)} ms net; ${long.slackCalls} Slack calls (goal <= 20 ms)`,
  );
  // Waking up 2,000 times 20 ms apart with nothing to do: the floor of any per-token work here.
  const wakeCpu = process.cpuUsage();
  for (let i = 0; i < 2000; i++) await new Promise((r) => setTimeout(r, 20));
  const wake = process.cpuUsage(wakeCpu);
  const wakeMs = (wake.user + wake.system) / 1000;
  console.log(`  floor: waking up 2,000 times 20 ms apart, doing nothing: ${round(wakeMs)} ms`);
  // The writer alone: 2,000 deltas of 4 characters, 20 ms apart, into Slack.
  const writer = new StreamWriter({
    calls,
    channel: 'C0BENCH01',
    threadTs: '1700000001.000001',
    recipient: { userId: 'U0BENCH01', teamId: 'T0BENCH01' },
    logger,
  });
  const writerCpu = process.cpuUsage();
  for (let i = 0; i < 2000; i++) {
    writer.text('tok ');
    await new Promise((r) => setTimeout(r, 20));
  }
  await writer.stop();
  const used = process.cpuUsage(writerCpu);
  console.log(
    `  the stream writer and its ${writer.calls} Slack calls, fed 2,000 deltas 20 ms apart: ${round((used.user + used.system) / 1000 - wakeMs)} ms above that floor`,
  );
} finally {
  child.kill();
}
