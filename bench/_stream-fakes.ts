/**
 * The fake OpenAI and the fake Slack of bench/stream-answer.ts, in a process of their own so the bench
 * measures only the worker side's CPU. A question `tokens=<n> rate=<tokens per second>` is answered with
 * n tokens (4 characters each) streamed at that rate. Prints one JSON line with the URLs, then serves.
 */
import { type FakeStep, startFakeOpenAI } from '../test/fakes/openai-server.js';
import { startFakeSlack } from '../test/fakes/slack-api-server.js';

const answer: FakeStep = (request) => {
  const question = request.body.messages.at(-1);
  const text = typeof question?.content === 'string' ? question.content : '';
  const tokens = Number(/tokens=(\d+)/.exec(text)?.[1] ?? 100);
  const rate = Number(/rate=(\d+)/.exec(text)?.[1] ?? 50);
  const words = Array.from({ length: tokens }, (_, i) => (i % 12 === 11 ? 'end.' : 'tok ')).join('');
  return {
    content: words,
    usage: { prompt_tokens: 50, completion_tokens: tokens },
    stream: { chunkChars: 4, delayMs: 1000 / rate },
  };
};

const openai = await startFakeOpenAI(Array.from({ length: 1_000 }, () => answer));
const slack = await startFakeSlack({ agentSurfaces: {} });
console.log(JSON.stringify({ openai: openai.url, slack: slack.apiUrl, token: slack.token }));
