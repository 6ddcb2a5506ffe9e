import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';
import { ModelError } from '../../src/loop/errors.js';
import type { Message } from '../../src/loop/messages.js';
import type { ModelRequest, ToolSchema } from '../../src/loop/model-port.js';
import { createOpenAIModel, type OpenAIModelOptions } from '../../src/loop/openai-model.js';
import { type FakeOpenAI, type FakeStep, startFakeOpenAI } from '../fakes/openai-server.js';

const API_KEY = 'sk-test-123';
const USER_ASKS: Message[] = [
  { role: 'system', content: 'You are loopgate.' },
  { role: 'user', content: 'Is payments healthy?', name: 'U012ABC' },
];
const STATUS_TOOL: ToolSchema = {
  name: 'http_get',
  description: 'GET a status page',
  parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
};

/** The adapter is tested over Node's fetch and over the buffered fetch the worker gives it. */
const FETCHES: { name: string; fetch: typeof fetch | undefined }[] = [
  { name: 'the built-in fetch', fetch: undefined },
  { name: 'the buffered fetch', fetch: createBufferedFetch() },
];
let fetchUnderTest: typeof fetch | undefined;

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setUp(script: FakeStep[], opts: Partial<OpenAIModelOptions> = {}) {
  fake = await startFakeOpenAI(script);
  const model = createOpenAIModel({
    apiKey: API_KEY,
    baseURL: fake.url,
    model: 'gpt-test',
    ...(fetchUnderTest ? { fetch: fetchUnderTest } : {}),
    ...opts,
  });
  return { fake, model };
}

function ask(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: USER_ASKS, tools: [], signal: new AbortController().signal, ...overrides };
}

async function modelError(promise: Promise<unknown>): Promise<ModelError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ModelError);
  return err as ModelError;
}

describe.each(FETCHES)('createOpenAIModel over $name: replies', ({ fetch: f }) => {
  beforeEach(() => {
    fetchUnderTest = f;
  });

  it('maps a text reply, its usage and the answering model', async () => {
    const { model } = await setUp([
      { content: 'All green.', usage: { prompt_tokens: 123, completion_tokens: 7 }, model: 'gpt-test-2026' },
    ]);
    expect(await model.complete(ask())).toEqual({
      content: 'All green.',
      toolCalls: [],
      usage: { inputTokens: 123, outputTokens: 7 },
      model: 'gpt-test-2026',
      finishReason: 'stop',
    });
  });

  it('keeps parallel tool calls in order with their raw arguments, malformed JSON included', async () => {
    const { model } = await setUp([
      {
        toolCalls: [
          { id: 'call_a', name: 'http_get', arguments: '{"url": "https://status.example/payments"}' },
          { id: 'call_b', name: 'http_get', arguments: '{"url": "https://status.exa' },
        ],
      },
    ]);
    const reply = await model.complete(ask({ tools: [STATUS_TOOL] }));
    expect(reply.content).toBeNull();
    expect(reply.toolCalls).toEqual([
      { id: 'call_a', name: 'http_get', arguments: '{"url": "https://status.example/payments"}' },
      { id: 'call_b', name: 'http_get', arguments: '{"url": "https://status.exa' },
    ]);
  });

  it('reports no usage when the server sends none, so the engine charges its estimate', async () => {
    const { model } = await setUp([{ content: 'ok', usage: null }]);
    expect((await model.complete(ask())).usage).toBeUndefined();
  });

  it("returns content '' for a reply with neither content nor tool calls", async () => {
    const { model } = await setUp([{}]);
    expect(await model.complete(ask())).toMatchObject({ content: '', toolCalls: [] });
  });

  it('reports a refusal as such, not as the answer', async () => {
    const { model } = await setUp([{ refusal: 'I cannot help with that.' }]);
    expect(await model.complete(ask())).toMatchObject({ content: '', refusal: 'I cannot help with that.' });
  });

  it('reports why the reply ended: cut off at the token limit, or filtered', async () => {
    const { model } = await setUp([
      { content: 'The first half of', finishReason: 'length' },
      { content: null, finishReason: 'content_filter' },
    ]);
    expect(await model.complete(ask())).toMatchObject({
      content: 'The first half of',
      finishReason: 'length',
    });
    expect(await model.complete(ask())).toMatchObject({ content: '', finishReason: 'content_filter' });
  });
});

describe.each(FETCHES)('createOpenAIModel over $name: streamed replies', ({ fetch: f }) => {
  beforeEach(() => {
    fetchUnderTest = f;
  });

  it('hands each text delta to onText as it arrives and returns the whole reply with its usage', async () => {
    const { fake, model } = await setUp([
      {
        content: 'Payments is healthy: p99 120 ms.',
        usage: { prompt_tokens: 321, completion_tokens: 9 },
        model: 'gpt-test-2026',
        stream: { chunkChars: 3, delayMs: 5 },
      },
    ]);
    const deltas: string[] = [];
    const reply = await model.complete(ask({ onText: (d) => deltas.push(d) }));
    expect(fake.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(deltas.length).toBe(Math.ceil('Payments is healthy: p99 120 ms.'.length / 3));
    expect(deltas.join('')).toBe('Payments is healthy: p99 120 ms.');
    expect(reply).toEqual({
      content: 'Payments is healthy: p99 120 ms.',
      toolCalls: [],
      usage: { inputTokens: 321, outputTokens: 9 },
      model: 'gpt-test-2026',
      finishReason: 'stop',
    });
  });

  it('assembles parallel tool calls from their argument deltas, in order, with the text before them', async () => {
    const { model } = await setUp([
      {
        content: 'Checking both.',
        toolCalls: [
          { id: 'call_a', name: 'http_get', arguments: '{"url": "https://status.example/payments"}' },
          { id: 'call_b', name: 'http_get', arguments: '{"url": "https://status.exa' },
        ],
        stream: { chunkChars: 5 },
      },
    ]);
    const deltas: string[] = [];
    const reply = await model.complete(ask({ tools: [STATUS_TOOL], onText: (d) => deltas.push(d) }));
    expect(deltas.join('')).toBe('Checking both.');
    expect(reply).toMatchObject({ content: 'Checking both.', finishReason: 'tool_calls' });
    expect(reply.toolCalls).toEqual([
      { id: 'call_a', name: 'http_get', arguments: '{"url": "https://status.example/payments"}' },
      { id: 'call_b', name: 'http_get', arguments: '{"url": "https://status.exa' },
    ]);
  });

  it('reports no usage when the stream carries none, and a refusal or a cut-off like a whole reply', async () => {
    const { model } = await setUp([
      { content: 'ok', usage: null },
      { refusal: 'I cannot help with that.' },
      { content: 'The first half of', finishReason: 'length' },
    ]);
    const onText = () => {};
    expect((await model.complete(ask({ onText }))).usage).toBeUndefined();
    expect(await model.complete(ask({ onText }))).toMatchObject({
      content: '',
      refusal: 'I cannot help with that.',
    });
    expect(await model.complete(ask({ onText }))).toMatchObject({
      content: 'The first half of',
      finishReason: 'length',
    });
  });

  it('turns a stream broken off mid-way into a ModelError, after the deltas that did arrive', async () => {
    const { model } = await setUp([{ content: 'abcdefghijkl', stream: { chunkChars: 2, breakAfter: 3 } }], {
      maxRetries: 0,
    });
    const deltas: string[] = [];
    const err = await modelError(model.complete(ask({ onText: (d) => deltas.push(d) })));
    expect(err.message).toMatch(/model request|model server/);
    expect(deltas.join('')).toBe('abcd');
  });

  it('rejects promptly when the signal aborts mid-stream', async () => {
    const { fake, model } = await setUp([
      { content: 'x'.repeat(400), stream: { chunkChars: 1, delayMs: 50 } },
    ]);
    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = modelError(
      model.complete(ask({ signal: controller.signal, onText: (d) => deltas.push(d) })),
    );
    const until = Date.now() + 10_000;
    while (deltas.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    const aborted = Date.now();
    controller.abort(new Error('stopped'));
    const err = await pending;
    expect(Date.now() - aborted).toBeLessThan(2_000);
    expect(err.message).toBe('model request aborted: stopped');
    expect(fake.requests).toHaveLength(1);
  });
});

describe.each(FETCHES)('createOpenAIModel over $name: request mapping', ({ fetch: f }) => {
  beforeEach(() => {
    fetchUnderTest = f;
  });

  it('sends history, tool results, tools, limits and the key the way Chat Completions expects', async () => {
    const { fake, model } = await setUp([{ content: 'Payments is up.' }], { temperature: 0.2 });
    const history: Message[] = [
      ...USER_ASKS,
      {
        role: 'assistant',
        content: 'Checking.',
        toolCalls: [
          { id: 'call_1', name: 'http_get', arguments: '{"url":"https://status.example/payments"}' },
          { id: 'call_2', name: 'http_get', arguments: '{bad json' },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', name: 'http_get', content: '{"ok":true,"data":"up"}' },
      { role: 'tool', toolCallId: 'call_2', name: 'http_get', content: '{"ok":false}' },
      { role: 'assistant', content: null },
      { role: 'user', content: 'And search?', name: 'jane.doe@example.com' },
    ];
    await model.complete(ask({ messages: history, tools: [STATUS_TOOL], maxOutputTokens: 500 }));

    expect(fake.requests).toHaveLength(1);
    const { body, headers, path } = fake.requests[0]!;
    expect(path).toBe('/v1/chat/completions');
    expect(headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(body).toMatchObject({
      model: 'gpt-test',
      max_completion_tokens: 500,
      parallel_tool_calls: true,
      temperature: 0.2,
      tools: [{ type: 'function', function: STATUS_TOOL }],
    });
    expect(body.stream).toBeUndefined();
    expect(body.max_tokens).toBeUndefined();
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are loopgate.' },
      { role: 'user', content: 'Is payments healthy?', name: 'U012ABC' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'http_get', arguments: '{"url":"https://status.example/payments"}' },
          },
          { id: 'call_2', type: 'function', function: { name: 'http_get', arguments: '{bad json' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"ok":true,"data":"up"}' },
      { role: 'tool', tool_call_id: 'call_2', content: '{"ok":false}' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'And search?', name: 'jane_doe_example_com' },
    ]);
  });

  it('leaves out tools, parallel_tool_calls, token limit and temperature when there are none', async () => {
    const { fake, model } = await setUp([{ content: 'hi' }]);
    await model.complete(ask());
    const body = fake.requests[0]!.body;
    expect(Object.keys(body).sort()).toEqual(['messages', 'model']);
  });

  it('honours parallelToolCalls: false', async () => {
    const { fake, model } = await setUp([{ content: 'hi' }], { parallelToolCalls: false });
    await model.complete(ask({ tools: [STATUS_TOOL] }));
    expect(fake.requests[0]!.body.parallel_tool_calls).toBe(false);
  });
});

describe.each(FETCHES)('createOpenAIModel over $name: retries and errors', ({ fetch: f }) => {
  beforeEach(() => {
    fetchUnderTest = f;
  });

  it('retries a 429 after Retry-After: 0 and succeeds', async () => {
    const { fake, model } = await setUp([
      { status: 429, headers: { 'retry-after': '0' } },
      { content: 'after the limit' },
    ]);
    expect((await model.complete(ask())).content).toBe('after the limit');
    expect(fake.requests).toHaveLength(2);
  });

  it('retries 500 twice and succeeds on the third attempt', async () => {
    const { fake, model } = await setUp([
      { status: 500, headers: { 'retry-after-ms': '1' } },
      { status: 500, headers: { 'retry-after-ms': '1' } },
      { content: 'third time' },
    ]);
    expect((await model.complete(ask())).content).toBe('third time');
    expect(fake.requests).toHaveLength(3);
  });

  it('gives up on a persistent 500 after maxRetries + 1 requests with a retryable ModelError', async () => {
    const down: FakeStep = {
      status: 500,
      headers: { 'retry-after-ms': '1' },
      body: { error: { message: 'upstream exploded', type: 'server_error' } },
    };
    const { fake, model } = await setUp([down, down, down, down, down], { maxRetries: 3 });
    const err = await modelError(model.complete(ask()));
    expect(fake.requests).toHaveLength(4);
    expect(err).toMatchObject({ code: 'model_error', status: 500, retryable: true });
    expect(err.message).toContain('HTTP 500');
    expect(err.message).toContain('upstream exploded');
    expect(err.message).toContain('3 retries');
  });

  it('does not retry a 400 and names the status and the server message', async () => {
    const { fake, model } = await setUp([
      { status: 400, body: { error: { message: "Invalid 'messages[1]'", type: 'invalid_request_error' } } },
      { content: 'never sent' },
    ]);
    const err = await modelError(model.complete(ask()));
    expect(fake.requests).toHaveLength(1);
    expect(err).toMatchObject({ status: 400, retryable: false });
    expect(err.message).toMatch(/HTTP 400: Invalid 'messages\[1\]'/);
  });

  it('recognises a request refused as longer than the context window, by code or by wording', async () => {
    const { model } = await setUp([
      {
        status: 400,
        body: {
          error: { message: 'too long', type: 'invalid_request_error', code: 'context_length_exceeded' },
        },
      },
      {
        status: 400,
        body: {
          error: {
            message:
              "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
          },
        },
      },
      { status: 400, body: { error: { message: "Invalid 'messages[1]'", type: 'invalid_request_error' } } },
    ]);
    expect(await modelError(model.complete(ask()))).toMatchObject({ status: 400, contextExceeded: true });
    expect(await modelError(model.complete(ask()))).toMatchObject({ status: 400, contextExceeded: true });
    expect(await modelError(model.complete(ask()))).toMatchObject({ status: 400, contextExceeded: false });
  });

  it('does not retry a 401 and keeps a plain-text body', async () => {
    const { fake, model } = await setUp([{ status: 401, body: 'bad key' }]);
    const err = await modelError(model.complete(ask()));
    expect(fake.requests).toHaveLength(1);
    expect(err).toMatchObject({ status: 401, retryable: false });
    expect(err.message).toContain('bad key');
  });

  it('turns replies slower than timeoutMs into a retryable timeout after the retries', async () => {
    // Far slower than the bound below, which leaves room for a loaded machine (the fake stops waiting
    // when the client gives up, so this costs nothing).
    const slow: FakeStep = { delayMs: 10_000, step: { content: 'too late' } };
    const { fake, model } = await setUp([slow, slow], { timeoutMs: 200, maxRetries: 1 });
    const started = Date.now();
    const err = await modelError(model.complete(ask()));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(fake.requests).toHaveLength(2);
    expect(err).toMatchObject({ status: undefined, retryable: true });
    expect(err.message).toContain('did not answer within 200 ms');
  });

  it('reports an unreachable server as a retryable ModelError', async () => {
    const { fake, model } = await setUp([], { maxRetries: 0 });
    await fake.close();
    const err = await modelError(model.complete(ask()));
    expect(err).toMatchObject({ status: undefined, retryable: true });
    expect(err.message).toContain('unreachable');
  });

  it('reports a 200 that is not a chat completion as a non-retryable ModelError', async () => {
    const { model } = await setUp([{ status: 200, body: { choices: [] } }]);
    const err = await modelError(model.complete(ask()));
    expect(err).toMatchObject({ retryable: false });
    expect(err.message).toContain('unusable chat completion');
  });
});

describe.each(FETCHES)('createOpenAIModel over $name: aborts', ({ fetch: f }) => {
  beforeEach(() => {
    fetchUnderTest = f;
  });

  it('rejects promptly when the signal aborts during a slow reply', async () => {
    const { fake, model } = await setUp([{ delayMs: 10_000, step: { content: 'too late' } }]);
    const controller = new AbortController();
    const pending = modelError(model.complete(ask({ signal: controller.signal })));
    // Aborted once the request reached the server (a fixed timer could fire before it is even sent).
    const until = Date.now() + 10_000;
    while (fake.requests.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    const aborted = Date.now();
    controller.abort(new Error('run deadline passed'));
    const err = await pending;
    expect(Date.now() - aborted).toBeLessThan(5_000);
    expect(err).toMatchObject({ retryable: false, status: undefined });
    expect(err.message).toBe('model request aborted: run deadline passed');
    expect(fake.requests).toHaveLength(1);
  });

  it('rejects promptly when the signal aborts while the SDK waits before a retry', async () => {
    const { fake, model } = await setUp([
      { status: 429, headers: { 'retry-after-ms': '10000' } },
      { content: 'never asked' },
    ]);
    const controller = new AbortController();
    const pending = modelError(model.complete(ask({ signal: controller.signal })));
    // Aborted once the 429 was answered, while the SDK waits its 10 s before the retry.
    while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    const aborted = Date.now();
    controller.abort();
    const err = await pending;
    expect(Date.now() - aborted).toBeLessThan(5_000);
    expect(err.message).toMatch(/^model request aborted/);
    expect(fake.requests).toHaveLength(1);
  });

  it('sends nothing when the signal is already aborted', async () => {
    const { fake, model } = await setUp([{ content: 'never asked' }]);
    const err = await modelError(model.complete(ask({ signal: AbortSignal.abort() })));
    expect(err.retryable).toBe(false);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('startFakeOpenAI', () => {
  it('answers from the conversation with a function step', async () => {
    const { fake, model } = await setUp([
      { toolCalls: [{ name: 'http_get', arguments: '{"url":"https://status.example/"}' }] },
      (request) => {
        const last = request.body.messages.at(-1);
        return { content: last?.role === 'tool' ? `saw ${String(last.content)}` : 'no tool result' };
      },
    ]);
    const first = await model.complete(ask({ tools: [STATUS_TOOL] }));
    expect(first.toolCalls).toEqual([
      { id: 'call_1_0', name: 'http_get', arguments: '{"url":"https://status.example/"}' },
    ]);
    const history: Message[] = [
      ...USER_ASKS,
      { role: 'assistant', content: null, toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: 'call_1_0', name: 'http_get', content: 'up' },
    ];
    expect((await model.complete(ask({ messages: history, tools: [STATUS_TOOL] }))).content).toBe('saw up');
    expect(fake.remaining()).toBe(0);
  });

  it('lets an async function step return any step, a delay included', async () => {
    const { model } = await setUp([async () => ({ delayMs: 20, step: { content: 'late but fine' } })]);
    expect((await model.complete(ask())).content).toBe('late but fine');
  });

  it('refuses a conversation with an unanswered tool call without consuming a step', async () => {
    const { fake, model } = await setUp([{ content: 'unused' }]);
    const history: Message[] = [
      ...USER_ASKS,
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_x', name: 'http_get', arguments: '{}' }] },
      { role: 'user', content: 'well?' },
    ];
    const err = await modelError(model.complete(ask({ messages: history, tools: [STATUS_TOOL] })));
    expect(err).toMatchObject({ status: 400, retryable: false });
    expect(err.message).toContain('call_x');
    expect(fake.requests).toHaveLength(0);
    expect(fake.malformed).toEqual([
      { path: '/v1/chat/completions', problem: expect.stringContaining('call_x') },
    ]);
    expect(fake.remaining()).toBe(1);
  });

  it('with a context window, refuses a request whose count and reply bound pass it, and reports its count as usage', async () => {
    fake = await startFakeOpenAI([{ content: 'fits' }, { content: 'unused' }], { contextTokens: 2_000 });
    const model = createOpenAIModel({ apiKey: API_KEY, baseURL: fake.url, model: 'gpt-test', maxRetries: 0 });
    const small = await model.complete(ask({ maxOutputTokens: 100 }));
    expect(small.usage).toEqual({ inputTokens: fake.counted[0], outputTokens: 5 });
    const long: Message[] = [...USER_ASKS, { role: 'user', content: 'word '.repeat(3_000) }];
    const err = await modelError(model.complete(ask({ messages: long, maxOutputTokens: 100 })));
    expect(err).toMatchObject({ status: 400, contextExceeded: true });
    expect(err.message).toMatch(/maximum context length is 2000 tokens/);
    expect(fake.tooLong).toEqual([{ tokens: expect.any(Number), maxCompletionTokens: 100 }]);
    expect(fake.remaining()).toBe(1);
  });

  it('answers 500 without inviting retries once the script is exhausted', async () => {
    const { fake, model } = await setUp([], { maxRetries: 2 });
    const err = await modelError(model.complete(ask()));
    expect(fake.requests).toHaveLength(1);
    expect(err.status).toBe(500);
    expect(err.message).toContain('script exhausted');
  });

  it('serves the path without /v1, refuses stream_options without a stream and unknown routes, and takes pushed steps', async () => {
    fake = await startFakeOpenAI();
    fake.push({ content: 'pushed' });
    const root = fake.url.replace(/\/v1$/, '');
    const post = (path: string, body: object) =>
      fetch(`${root}${path}`, { method: 'POST', body: JSON.stringify(body) });
    const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

    const options = await post('/v1/chat/completions', { ...chat, stream_options: { include_usage: true } });
    expect(options.status).toBe(400);
    expect((await post('/v1/embeddings', chat)).status).toBe(404);
    const ok = await post('/chat/completions', chat);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ choices: [{ message: { content: 'pushed' } }] });
    expect(fake.requests.map((r) => r.path)).toEqual(['/chat/completions']);
  });
});
