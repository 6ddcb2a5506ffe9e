/**
 * A model server's refusal reaches people and the trace in the server's own words (status and message,
 * secrets redacted), distinct from a server that could not be reached.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { modelFailureSentence } from '../../src/loop/errors.js';
import { createOpenAIModel } from '../../src/loop/openai-model.js';
import { runUntilPause } from '../../src/loop/run.js';
import { SchemaFormMemory } from '../../src/loop/schema-forms.js';
import { redactServerWords } from '../../src/loop/server-words.js';
import { type FakeOpenAI, LLAMA_CPP_GRAMMAR_ERROR, startFakeOpenAI } from '../fakes/openai-server.js';
import { deps, newRun } from '../support/engine.js';

const KEY = 'sk-live-abcdef0123456789';
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function stopMessageAgainst(baseURL: string) {
  const model = createOpenAIModel({
    apiKey: KEY,
    baseURL,
    model: 'gpt-test',
    maxRetries: 0,
    timeoutMs: 2_000,
    schemaMemory: new SchemaFormMemory(),
  });
  const outcome = await runUntilPause(newRun(), deps(model).deps);
  expect(outcome.state.stopReason).toBe('model_error');
  return outcome.state.stopMessage ?? '';
}

describe('errors in the server’s own words', () => {
  it("a 400 from llama.cpp is told as the server's refusal, not as an unreachable model", async () => {
    // Refused in the standard form and again in the lenient one.
    fake = await startFakeOpenAI([
      { status: 400, body: LLAMA_CPP_GRAMMAR_ERROR },
      { status: 400, body: LLAMA_CPP_GRAMMAR_ERROR },
    ]);
    const message = await stopMessageAgainst(fake.url);
    expect(message).toBe(
      'The model server refused the request (HTTP 400): Failed to initialize samplers: failed to parse grammar',
    );
    expect(message).not.toContain('could not be reached');
  });

  it('a 401 that echoes the key is told with the key redacted', async () => {
    fake = await startFakeOpenAI([
      {
        status: 401,
        body: {
          error: {
            message: `Incorrect API key provided: ${KEY}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        },
      },
    ]);
    const message = await stopMessageAgainst(fake.url);
    expect(message).toMatch(
      /^The model server refused the request \(HTTP 401\): Incorrect API key provided: \[redacted\]/,
    );
    expect(message).not.toContain('abcdef0123456789');
  });

  it('a 503 is told as a server failure with its words', async () => {
    fake = await startFakeOpenAI([
      { status: 503, body: { error: { message: 'Loading model', type: 'unavailable_error', code: 503 } } },
    ]);
    expect(await stopMessageAgainst(fake.url)).toBe('The model server failed (HTTP 503): Loading model');
  });

  it('a server nobody listens on is "could not be reached"', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    await new Promise<void>((r) => server.close(() => r()));
    const message = await stopMessageAgainst(`http://127.0.0.1:${port}/v1`);
    expect(message).toMatch(
      /^The model could not be reached: model server at http:\/\/127\.0\.0\.1:\d+\/v1 unreachable/,
    );
  });

  it('an error that is no ModelError is "could not be reached" with its message', () => {
    expect(modelFailureSentence(new Error('boom'))).toBe('The model could not be reached: boom');
  });
});

describe('redactServerWords', () => {
  it('removes the key sent, bearer tokens and key-shaped words, and bounds the text', () => {
    expect(redactServerWords('bad key local-key-123 here', ['local-key-123'])).toBe(
      'bad key [redacted] here',
    );
    expect(redactServerWords('Authorization: Bearer abc.def.ghi123')).toBe('Authorization: [redacted]');
    expect(redactServerWords('key sk-proj-AAAAAAAAAAAA')).toBe('key [redacted]');
    expect(redactServerWords('{"api_key":"hunter2hunter2"}')).toBe('{"api_key":"[redacted]"}');
    expect(redactServerWords('failed to parse grammar')).toBe('failed to parse grammar');
    // A placeholder key such as "x" would blank every x.
    expect(redactServerWords('max tokens exceeded', ['x'])).toBe('max tokens exceeded');
    expect(redactServerWords('y'.repeat(5000)).length).toBe(1001);
  });
});
