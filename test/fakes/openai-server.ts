/**
 * A fake OpenAI-compatible Chat Completions server for tests: a real HTTP server on 127.0.0.1 (random
 * port) that answers `POST /v1/chat/completions` (or `/chat/completions`) from a script.
 *
 * Used in-process by the adapter's tests and, through `OPENAI_BASE_URL=<fake.url>`, by end-to-end tests
 * whose bot and worker processes reach it over HTTP.
 *
 * - Each request consumes exactly one script step, in arrival order. A step is a reply, an error, a
 *   delay before another step, or a function of the recorded request returning a step (to answer from
 *   the conversation so far).
 * - Every accepted request is recorded (`requests`: path, lower-cased headers, validated JSON body).
 * - A request with `stream: true` is answered as the real API streams: Server-Sent Events of
 *   `chat.completion.chunk` objects (the text cut into pieces of `stream.chunkChars`, `stream.delayMs`
 *   apart; tool calls as a first delta with id and name, then argument pieces), a last chunk with the
 *   usage when `stream_options.include_usage` is true, then `data: [DONE]`.
 * - Requests are checked like the real API checks them: a body that is not a chat request,
 *   or whose tool messages do not answer the preceding assistant `tool_calls` one for one, gets a 400,
 *   consumes no step, and is listed in `malformed`, so a broken conversation fails loudly.
 * - When the script runs out the fake answers 500 with `x-should-retry: false` (the SDK then does not
 *   retry) and a message saying so.
 * - With `contextTokens`, it counts each request's tokens (gpt-tokenizer over the JSON of its messages and
 *   tools, times `tokenFactor`: another tokenizer than loopgate's estimate) and, like the real API,
 *   refuses with 400 `context_length_exceeded` one whose count plus its reply bound passes the window
 *   (listed in `tooLong`, consuming no step); replies report that count as `prompt_tokens`.
 * - With `schemaCheck`, it refuses tool schemas as a real server does, before consuming a step (listed in
 *   `schemaRefused`): `llama.cpp` answers exactly what llama.cpp's server answers when its JSON-schema
 *   grammar cannot be built (any `maxLength: 2000`): HTTP 400 `{"error":{"code":400,"message":"Failed to
 *   initialize samplers: failed to parse grammar","type":"invalid_request_error"}}` (server-common.cpp
 *   format_error_response, server-context.cpp); `openai-strict` refuses a `strict: true` function whose
 *   schema breaks OpenAI's strict mode, in OpenAI's error shape (code `invalid_function_parameters`).
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countTokens } from 'gpt-tokenizer';
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------------
// The request the fake accepts
// ---------------------------------------------------------------------------------------------------

const textContent = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);

const wireToolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

const wireMessage = z.discriminatedUnion('role', [
  z.looseObject({ role: z.enum(['system', 'developer']), content: textContent }),
  z.looseObject({ role: z.literal('user'), content: textContent, name: z.string().optional() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: textContent.nullish(),
    tool_calls: z.array(wireToolCall).min(1).optional(),
  }),
  z.looseObject({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: textContent }),
]);

const chatRequest = z.looseObject({
  model: z.string().min(1),
  messages: z.array(wireMessage).min(1),
  tools: z
    .array(
      z.looseObject({
        type: z.literal('function'),
        function: z.looseObject({
          name: z.string().min(1),
          description: z.string().optional(),
          parameters: z.record(z.string(), z.unknown()).optional(),
        }),
      }),
    )
    .min(1)
    .optional(),
  parallel_tool_calls: z.boolean().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
  max_tokens: z.number().int().positive().optional(),
  temperature: z.number().optional(),
  stream: z.boolean().optional(),
  stream_options: z.strictObject({ include_usage: z.boolean().optional() }).optional(),
});

/** A validated Chat Completions request body (unknown extra fields are kept). */
export type ChatRequest = z.infer<typeof chatRequest>;
export type WireMessage = z.infer<typeof wireMessage>;

export interface RecordedRequest {
  path: string;
  /** Header names are lower-case, as Node gives them. */
  headers: IncomingHttpHeaders;
  body: ChatRequest;
  /** The body exactly as it arrived (to compare requests byte for byte). */
  raw: string;
  /** performance.now() when the client went away before the answer was sent (it aborted the request). */
  abandonedAt?: number;
}

// ---------------------------------------------------------------------------------------------------
// The script
// ---------------------------------------------------------------------------------------------------

export interface FakeToolCall {
  /** Default: `call_<request number>_<index>`, unique within one fake server. */
  id?: string;
  name: string;
  /** Sent exactly as given, so tests can send malformed JSON. */
  arguments: string;
}

/** A 200 reply. */
export interface FakeReply {
  /** Default null. */
  content?: string | null;
  toolCalls?: FakeToolCall[];
  /** A refusal text (content is then usually null). */
  refusal?: string;
  /** Default `{ prompt_tokens: 10, completion_tokens: 5 }`; null leaves `usage` out of the reply. */
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
  } | null;
  /** Model name in the reply; default: the request's model. */
  model?: string;
  /** `finish_reason`; default `tool_calls` with tool calls, else `stop` (e.g. `length`, `content_filter`). */
  finishReason?: string;
  /** How this reply streams when streaming was asked for; default the server's `stream` option. */
  stream?: FakeStreamPace;
}

export interface FakeStreamPace {
  /** Characters of text (or tool arguments) per chunk. Default 4, about one token. */
  chunkChars?: number;
  /** Wait between two chunks. Default 0. */
  delayMs?: number;
  /** Ends the response (the connection) after this many chunks, without [DONE]: a stream broken off. */
  breakAfter?: number;
}

/**
 * A raw HTTP answer, usually an error (any status works, e.g. a 200 with a body that is no completion).
 * `body` defaults to an OpenAI-style `{ error: { message, type, param, code } }`.
 */
export interface FakeError {
  status: number;
  /** An object is sent as JSON, a string as text/plain. */
  body?: unknown;
  /** E.g. `{ 'retry-after': '0' }` or `{ 'retry-after-ms': '10' }`. */
  headers?: Record<string, string>;
}

/**
 * Wait `delayMs`, then answer with `step` (the wait ends early when the client goes away). Not named
 * `then`: an object with a `then` function is a thenable, and `await` would call it.
 */
export interface FakeDelay {
  delayMs: number;
  step: FakeStep;
}

export type FakeStepFn = (request: RecordedRequest) => FakeStep | Promise<FakeStep>;

export type FakeStep = FakeReply | FakeError | FakeDelay | FakeStepFn;

export interface FakeOpenAIOptions {
  /** The model's window: a request's counted tokens plus its reply bound must fit. Default none. */
  contextTokens?: number;
  /** Scales the fake's count (a tokenizer that makes more tokens than loopgate's estimate). Default 1. */
  tokenFactor?: number;
  /** How replies stream when a request asks for a stream (see FakeReply.stream). */
  stream?: FakeStreamPace;
  /** Refuse tool schemas as this server does (see the module comment). Default: accept any. */
  schemaCheck?: 'llama.cpp' | 'openai-strict';
}

/** llama.cpp's answer when its grammar cannot be built from the tools' schemas, byte for byte. */
export const LLAMA_CPP_GRAMMAR_ERROR = {
  error: {
    code: 400,
    message: 'Failed to initialize samplers: failed to parse grammar',
    type: 'invalid_request_error',
  },
};

export interface FakeOpenAI {
  /** Base URL ending in `/v1`: give it to the SDK as `baseURL` or to a process as `OPENAI_BASE_URL`. */
  url: string;
  /** Accepted chat requests, in arrival order. */
  requests: RecordedRequest[];
  /** Requests refused with 400 before consuming a step, with the reason. */
  malformed: { path: string; problem: string }[];
  /** Requests refused as longer than `contextTokens`: their counted tokens and reply bound. */
  tooLong: { tokens: number; maxCompletionTokens: number }[];
  /** The counted tokens of each accepted request (with `contextTokens`), in arrival order. */
  counted: number[];
  /** Requests refused by `schemaCheck`, with the tools they offered and the error body sent. */
  schemaRefused: { tools: unknown; body: unknown }[];
  /** Append steps to the script. */
  push(...steps: FakeStep[]): void;
  /** Steps not consumed yet. */
  remaining(): number;
  /** Stops listening and drops open connections (pending delays end with them). Safe to call twice. */
  close(): Promise<void>;
}

const DEFAULT_USAGE = { prompt_tokens: 10, completion_tokens: 5 };
const CHAT_PATHS = new Set(['/v1/chat/completions', '/chat/completions']);

/** The fake's own count of a request's input tokens. */
function countRequest(body: ChatRequest, factor: number): number {
  const text = JSON.stringify({ messages: body.messages, tools: body.tools ?? [] });
  return Math.ceil(countTokens(text, { disallowedSpecial: new Set() }) * factor);
}

export async function startFakeOpenAI(
  script: FakeStep[] = [],
  options: FakeOpenAIOptions = {},
): Promise<FakeOpenAI> {
  const steps = [...script];
  const requests: RecordedRequest[] = [];
  const malformed: { path: string; problem: string }[] = [];
  const tooLong: { tokens: number; maxCompletionTokens: number }[] = [];
  const counted: number[] = [];
  const schemaRefused: { tools: unknown; body: unknown }[] = [];

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, errorBody(`fake OpenAI crashed: ${String(err)}`), {});
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const raw = await readBody(req);
    if (req.method !== 'POST' || !CHAT_PATHS.has(path)) {
      sendJson(res, 404, errorBody(`fake OpenAI: no route for ${req.method} ${path}`), {});
      return;
    }
    const problem = checkRequest(raw);
    if (typeof problem === 'string') {
      malformed.push({ path, problem });
      sendJson(res, 400, errorBody(problem, 'invalid_request_error'), {});
      return;
    }
    const refusal = options.schemaCheck && schemaRefusal(problem, options.schemaCheck);
    if (refusal) {
      schemaRefused.push({ tools: problem.tools, body: refusal });
      sendJson(res, 400, refusal, {});
      return;
    }
    let usage: FakeReply['usage'] | undefined;
    if (options.contextTokens !== undefined) {
      const tokens = countRequest(problem, options.tokenFactor ?? 1);
      const maxCompletionTokens = problem.max_completion_tokens ?? problem.max_tokens ?? 0;
      if (tokens + maxCompletionTokens > options.contextTokens) {
        tooLong.push({ tokens, maxCompletionTokens });
        const message = `This model's maximum context length is ${options.contextTokens} tokens. However, you requested ${tokens + maxCompletionTokens} tokens (${tokens} in the messages, ${maxCompletionTokens} in the completion). Please reduce the length of the messages or completion.`;
        sendJson(
          res,
          400,
          {
            error: {
              message,
              type: 'invalid_request_error',
              param: 'messages',
              code: 'context_length_exceeded',
            },
          },
          {},
        );
        return;
      }
      counted.push(tokens);
      usage = { prompt_tokens: tokens, completion_tokens: 5 };
    }
    const recorded: RecordedRequest = { path, headers: req.headers, body: problem, raw };
    requests.push(recorded);
    res.once('close', () => {
      if (!res.writableFinished) recorded.abandonedAt = performance.now();
    });
    const number = requests.length;
    const step = steps.shift();
    if (step === undefined) {
      const message = `fake OpenAI: script exhausted, no step left for request #${number}`;
      sendJson(res, 500, errorBody(message), { 'x-should-retry': 'false' });
      return;
    }
    await answer(step, recorded, number, res, usage);
  }

  async function answer(
    step: FakeStep,
    request: RecordedRequest,
    number: number,
    res: ServerResponse,
    counted?: FakeReply['usage'],
  ) {
    if (typeof step === 'function') {
      await answer(await step(request), request, number, res, counted);
    } else if ('delayMs' in step) {
      await waitUnlessClosed(step.delayMs, res);
      if (!res.destroyed) await answer(step.step, request, number, res, counted);
    } else if ('status' in step) {
      const body = step.body ?? errorBody(`fake OpenAI: scripted error ${step.status}`);
      if (typeof body === 'string') {
        res.writeHead(step.status, { 'content-type': 'text/plain', ...step.headers }).end(body);
      } else {
        sendJson(res, step.status, body, step.headers ?? {});
      }
    } else {
      const reply = step.usage === undefined && counted ? { ...step, usage: counted } : step;
      if (request.body.stream === true) {
        const pace = { ...options.stream, ...reply.stream };
        const usage = request.body.stream_options?.include_usage === true;
        await sendStream(res, completionChunks(reply, request.body.model, number, pace, usage), pace);
      } else {
        sendJson(res, 200, completionBody(reply, request.body.model, number), {});
      }
    }
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    malformed,
    tooLong,
    counted,
    schemaRefused,
    push: (...more) => {
      steps.push(...more);
    },
    remaining: () => steps.length,
    close: () =>
      new Promise<void>((resolve, reject) => {
        if (!server.listening) return resolve();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------------------------------
// Checking requests, building replies
// ---------------------------------------------------------------------------------------------------

/** The validated body, or why the real API would refuse it. */
function checkRequest(raw: string): ChatRequest | string {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return 'request body is not JSON';
  }
  const parsed = chatRequest.safeParse(json);
  if (!parsed.success) return `invalid chat request: ${z.prettifyError(parsed.error)}`;
  if (parsed.data.parallel_tool_calls !== undefined && parsed.data.tools === undefined) {
    return "parallel_tool_calls is only allowed when 'tools' are specified";
  }
  if (parsed.data.stream_options !== undefined && parsed.data.stream !== true) {
    return 'The stream_options parameter is only allowed when stream is enabled.';
  }
  return checkToolPairing(parsed.data.messages) ?? parsed.data;
}

/** Every subschema of a JSON Schema, the root first. */
function* subschemas(schema: unknown): Generator<Record<string, unknown>> {
  if (Array.isArray(schema)) {
    for (const s of schema) yield* subschemas(s);
    return;
  }
  if (typeof schema !== 'object' || schema === null) return;
  const s = schema as Record<string, unknown>;
  yield s;
  for (const key of ['items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not', 'propertyNames']) {
    yield* subschemas(s[key]);
  }
  for (const key of ['properties', '$defs']) {
    const group = s[key];
    if (typeof group === 'object' && group !== null) yield* subschemas(Object.values(group));
  }
}

/** The error body the server would refuse these tools with, or null when it accepts them. */
function schemaRefusal(body: ChatRequest, check: 'llama.cpp' | 'openai-strict'): object | null {
  for (const [i, tool] of (body.tools ?? []).entries()) {
    const parameters = tool.function.parameters ?? {};
    if (check === 'llama.cpp') {
      // llama.cpp's json-schema-to-grammar builds a repetition it cannot parse for exactly this limit.
      if ([...subschemas(parameters)].some((s) => s.maxLength === 2000)) return LLAMA_CPP_GRAMMAR_ERROR;
      continue;
    }
    if (tool.function.strict !== true) continue;
    const problem = strictProblem(parameters);
    if (problem) {
      return {
        error: {
          message: `Invalid schema for function '${tool.function.name}': ${problem}`,
          type: 'invalid_request_error',
          param: `tools[${i}].function.parameters`,
          code: 'invalid_function_parameters',
        },
      };
    }
  }
  return null;
}

/** What OpenAI's strict mode refuses in a schema (its documented rules), worded as its errors are. */
function strictProblem(parameters: Record<string, unknown>): string | null {
  for (const s of subschemas(parameters)) {
    for (const keyword of ['minLength', 'maxLength', 'default', 'propertyNames']) {
      if (keyword in s) return `In context=(), '${keyword}' is not permitted.`;
    }
    if (s.type !== 'object' && typeof s.properties !== 'object') continue;
    if (s.additionalProperties !== false) {
      return "In context=(), 'additionalProperties' is required to be supplied and to be false.";
    }
    const keys = Object.keys((s.properties as object | undefined) ?? {});
    const required = Array.isArray(s.required) ? s.required : [];
    const missing = keys.filter((k) => !required.includes(k));
    if (missing.length > 0) {
      return `In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0]}'.`;
    }
  }
  return null;
}

/** Like the real API: every assistant tool call is answered by the tool messages right after it. */
function checkToolPairing(messages: WireMessage[]): string | undefined {
  let open = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      if (!open.delete(m.tool_call_id)) {
        return `messages[${i}]: tool message answers '${m.tool_call_id}', which no preceding assistant message asked for (or it was answered already)`;
      }
      continue;
    }
    if (open.size > 0) {
      return `messages[${i}]: assistant tool_calls not answered before it: ${[...open].join(', ')}`;
    }
    if (m.role === 'assistant' && m.tool_calls) open = new Set(m.tool_calls.map((c) => c.id));
  }
  return open.size > 0 ? `tool_calls not answered at the end: ${[...open].join(', ')}` : undefined;
}

function completionBody(reply: FakeReply, requestModel: string, number: number): object {
  const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
    id: c.id ?? `call_${number}_${i}`,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  const usage = reply.usage === undefined ? DEFAULT_USAGE : reply.usage;
  return {
    id: `chatcmpl-fake-${number}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: reply.model ?? requestModel,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.content ?? null,
          refusal: reply.refusal ?? null,
          ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
        },
        finish_reason: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
        logprobs: null,
      },
    ],
    ...(usage !== null && {
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    }),
  };
}

/** The chunks the real API streams for `reply`, in order (without the final `[DONE]`). */
function completionChunks(
  reply: FakeReply,
  requestModel: string,
  number: number,
  pace: FakeStreamPace,
  includeUsage: boolean,
): object[] {
  const size = Math.max(1, pace.chunkChars ?? 4);
  const pieces = (text: string) => {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
    return out;
  };
  const base = {
    id: `chatcmpl-fake-${number}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: reply.model ?? requestModel,
  };
  const chunk = (delta: object, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
  });
  const chunks: object[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(reply.content ?? '')) chunks.push(chunk({ content: piece }));
  if (reply.refusal) chunks.push(chunk({ refusal: reply.refusal }));
  for (const [i, c] of (reply.toolCalls ?? []).entries()) {
    const id = c.id ?? `call_${number}_${i}`;
    chunks.push(
      chunk({ tool_calls: [{ index: i, id, type: 'function', function: { name: c.name, arguments: '' } }] }),
    );
    for (const piece of pieces(c.arguments)) {
      chunks.push(chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }));
    }
  }
  const toolCalls = reply.toolCalls?.length ?? 0;
  chunks.push(chunk({}, reply.finishReason ?? (toolCalls > 0 ? 'tool_calls' : 'stop')));
  const usage = reply.usage === undefined ? DEFAULT_USAGE : reply.usage;
  if (includeUsage) {
    chunks.push({
      ...base,
      choices: [],
      usage: usage && { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    });
  }
  return chunks;
}

/** Writes `chunks` as Server-Sent Events, paced; stops early when the client goes away. */
async function sendStream(res: ServerResponse, chunks: object[], pace: FakeStreamPace): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [i, chunk] of chunks.entries()) {
    if (res.destroyed) return;
    if (pace.breakAfter !== undefined && i >= pace.breakAfter) {
      // What was written reaches the client first; then the connection breaks.
      await new Promise((r) => setTimeout(r, 20));
      res.destroy();
      return;
    }
    if (i > 0 && (pace.delayMs ?? 0) > 0) await waitUnlessClosed(pace.delayMs ?? 0, res);
    if (res.destroyed) return;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}

function errorBody(message: string, type = 'server_error'): object {
  return { error: { message, type, param: null, code: null } };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Resolves after `ms`, or as soon as the client closes the connection (abort, timeout, close()). */
function waitUnlessClosed(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on('close', done);
  });
}
