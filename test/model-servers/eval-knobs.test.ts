/**
 * The eval runs a model as production does: OPENAI_TIMEOUT_MS and OPENAI_MAX_RETRIES from the
 * environment, the schema form and a server's cached tokens reported.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { evalMain } from '../../src/eval/cli.js';
import type { TrialRecord } from '../../src/eval/results.js';
import { type FakeOpenAI, LLAMA_CPP_GRAMMAR_ERROR, startFakeOpenAI } from '../fakes/openai-server.js';

let fake: FakeOpenAI | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function evalOnce(env: Record<string, string>, task = 'who-is-oncall') {
  const out = await mkdtemp(join(tmpdir(), 'loopgate-eval-knobs-'));
  dirs.push(out);
  const text = { out: '', err: '' };
  const code = await evalMain(['--model', 'local', '--tasks', task, '--out', out, '--price', 'local=1,2'], {
    stdout: { write: (t: string) => (text.out += t), isTTY: false },
    stderr: { write: (t: string) => (text.err += t) },
    env,
  });
  expect(code).toBe(0);
  const records = (await readFile(join(out, 'results.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as TrialRecord);
  return { records, text };
}

describe('the eval reads the same model knobs as production', () => {
  it('OPENAI_TIMEOUT_MS and OPENAI_MAX_RETRIES bound a slow model', async () => {
    fake = await startFakeOpenAI(
      Array.from({ length: 5 }, () => ({ delayMs: 10_000, step: { content: 'late' } })),
    );
    const started = performance.now();
    const { records } = await evalOnce({
      OPENAI_API_KEY: 'local',
      OPENAI_BASE_URL: fake.url,
      OPENAI_TIMEOUT_MS: '300',
      OPENAI_MAX_RETRIES: '0',
    });
    expect(records[0]!.metrics.stopReason).toBe('model_error');
    // One attempt, given up after 300 ms (the defaults would retry, each attempt waiting minutes).
    expect(fake.requests).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(8_000);
  });

  it("falls back to the lenient schemas on llama.cpp's refusal and reports cached tokens", async () => {
    fake = await startFakeOpenAI(
      Array.from({ length: 12 }, () => ({
        content: "I don't know.",
        usage: { prompt_tokens: 900, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 800 } },
      })),
      { schemaCheck: 'llama.cpp' },
    );
    // page-oncall-outage enables page_oncall, whose details allow 2000 characters.
    const { records, text } = await evalOnce(
      { OPENAI_API_KEY: 'local', OPENAI_BASE_URL: fake.url, OPENAI_MAX_RETRIES: '0' },
      'page-oncall-outage',
    );
    expect(fake.schemaRefused.length).toBeGreaterThanOrEqual(1);
    expect(fake.schemaRefused[0]!.body).toEqual(LLAMA_CPP_GRAMMAR_ERROR);
    expect(fake.requests.length).toBeGreaterThanOrEqual(1);
    const metrics = records[0]!.metrics;
    expect(metrics.stopReason).not.toBe('model_error');
    expect(metrics.cachedInputTokens).toBe(800 * metrics.steps);
    expect(text.out).toContain('tokens in/cached/out');
  });
});
