/**
 * The model port over OpenAI Chat Completions (api.openai.com or any OpenAI-compatible server). The only
 * module of loopgate that imports `openai`.
 *
 * Retries are the SDK's own: 408, 409, 429 and 5xx answers, connection errors and per-attempt timeouts
 * are retried up to `maxRetries` times with exponential backoff, honouring `retry-after-ms` and
 * `Retry-After` (and `x-should-retry`). Whatever still fails becomes a `ModelError`.
 *
 * Streaming: a request with `onText` is sent with `stream: true` and `stream_options.include_usage`; the
 * text deltas go to `onText` as they arrive and the chunks are assembled into the same reply a whole
 * completion gives (tool calls joined from their argument deltas, the usage of the last chunk), checked
 * like one. A stream that breaks off mid-way is a `ModelError` like any failed request (the SDK retries
 * only before the first byte).
 *
 * Aborts: when `request.signal` aborts, `complete` rejects at once with a `ModelError` (`retryable:
 * false`, no status, message "model request aborted: <reason>"), even while the SDK sleeps before a
 * retry; the abort is never rethrown as such.
 */
import { randomUUID } from 'node:crypto';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { z } from 'zod';
import { ModelError } from './errors.js';
import type { Message, ToolCall } from './messages.js';
import type { ModelPort, ModelReply, ModelRequest, ToolSchema } from './model-port.js';
import {
  type FormedTool,
  formTool,
  fromStrictArguments,
  isSchemaRefusal,
  SCHEMA_FORMS,
  type SchemaForm,
  SchemaFormMemory,
  sharedSchemaMemory,
} from './schema-forms.js';
import { redactServerWords } from './server-words.js';

type WireMessage = OpenAI.Chat.ChatCompletionMessageParam;
type WireRequest = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type WireStreamRequest = OpenAI.Chat.ChatCompletionCreateParamsStreaming;

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAIModelOptions {
  apiKey: string;
  /** Any OpenAI-compatible server. Default `https://api.openai.com/v1`; never read from the environment. */
  baseURL?: string;
  /** Model asked for; the reply's own model name is what `ModelReply.model` reports. */
  model: string;
  /** Retries after the first attempt. Default 2. */
  maxRetries?: number;
  /** Per attempt, so the worst case is about (maxRetries + 1) × timeoutMs plus backoff. Default 120 000. */
  timeoutMs?: number;
  /** Sent only when given. */
  temperature?: number;
  /** Sent as `parallel_tool_calls` whenever tools are offered. Default true. */
  parallelToolCalls?: boolean;
  /** The fetch the SDK sends with. Default the built-in one. */
  fetch?: typeof fetch;
  /** The form the tools' schemas are offered in (src/loop/schema-forms.ts). Default `standard`. */
  schemas?: SchemaForm;
  /**
   * Where a server's refusal of a schema form is remembered, per endpoint and model. Default one memory
   * shared by the whole process.
   */
  schemaMemory?: SchemaFormMemory;
  /**
   * Told once per endpoint and model (per memory) when the server refused the tools' schemas and the
   * lenient form was used instead, with the server's own words. Must not throw.
   */
  onSchemaFallback?: (fallback: SchemaFallback) => void;
}

export interface SchemaFallback {
  baseURL: string;
  model: string;
  /** The form the server refused. */
  refused: SchemaForm;
  /** The form used from now on. */
  using: SchemaForm;
  status: number;
  /** What the server said (secrets redacted). */
  serverMessage: string;
}

const optionsSchema = z.object({
  apiKey: z.string().min(1, 'apiKey must not be empty'),
  baseURL: z.url().optional(),
  model: z.string().min(1, 'model must not be empty'),
  maxRetries: z.number().int().min(0).default(2),
  timeoutMs: z.number().int().positive().default(120_000),
  temperature: z.number().min(0).max(2).optional(),
  parallelToolCalls: z.boolean().default(true),
  fetch: z.custom<typeof fetch>((f) => typeof f === 'function').optional(),
  schemas: z.enum(SCHEMA_FORMS).default('standard'),
  schemaMemory: z.instanceof(SchemaFormMemory).optional(),
  onSchemaFallback: z.custom<(f: SchemaFallback) => void>((f) => typeof f === 'function').optional(),
}) satisfies z.ZodType<unknown, OpenAIModelOptions>;

/** Creates the model port. Throws a ZodError naming the bad option. */
export function createOpenAIModel(opts: OpenAIModelOptions): ModelPort {
  const o = optionsSchema.parse(opts);
  const baseURL = o.baseURL ?? DEFAULT_BASE_URL;
  const client = new OpenAI({
    apiKey: o.apiKey,
    baseURL,
    maxRetries: o.maxRetries,
    timeout: o.timeoutMs,
    ...(o.fetch ? { fetch: o.fetch } : {}),
  });
  const describe = { baseURL, maxRetries: o.maxRetries, timeoutMs: o.timeoutMs, apiKey: o.apiKey };
  const memory = o.schemaMemory ?? sharedSchemaMemory;
  const memoryKey = `${baseURL}\u0000${o.model}`;

  async function send(request: ModelRequest, form: SchemaForm): Promise<ModelReply> {
    const { signal } = request;
    const tools = request.tools.map((t) => formTool(t, form));
    const body: WireRequest = {
      model: o.model,
      messages: request.messages.map(toWireMessage),
      ...(tools.length > 0 && {
        tools: tools.map(toWireTool),
        parallel_tool_calls: o.parallelToolCalls,
      }),
      ...(request.maxOutputTokens !== undefined && { max_completion_tokens: request.maxOutputTokens }),
      ...(o.temperature !== undefined && { temperature: o.temperature }),
    };
    let completion: unknown;
    try {
      const { onText } = request;
      completion = await untilAborted(
        onText
          ? streamed(
              client,
              { ...body, stream: true, stream_options: { include_usage: true } },
              signal,
              onText,
            )
          : client.chat.completions.create(body, { signal }),
        signal,
      );
    } catch (err) {
      throw toModelError(err, signal, describe);
    }
    return toReply(completion, o.model, baseURL, strictOriginals(request.tools, tools));
  }

  return {
    model: o.model,
    async complete(request: ModelRequest): Promise<ModelReply> {
      if (request.signal.aborted) throw abortedError(request.signal);
      const form = memory.formFor(memoryKey, o.schemas);
      try {
        return await send(request, form);
      } catch (err) {
        // A server that refuses the tools' schemas is asked once more with the lenient form, which
        // every server tried accepts; loopgate still validates arguments against the full schema.
        if (
          !(err instanceof ModelError) ||
          form === 'lenient' ||
          request.tools.length === 0 ||
          !isSchemaRefusal(err.status, err.serverMessage ?? '', err.serverCode)
        ) {
          throw err;
        }
        const reply = await send(request, 'lenient');
        if (memory.remember(memoryKey, 'lenient')) {
          o.onSchemaFallback?.({
            baseURL,
            model: o.model,
            refused: form,
            using: 'lenient',
            status: err.status ?? 400,
            serverMessage: err.serverMessage ?? err.message,
          });
        }
        return reply;
      }
    },
  };
}

/** The full schemas of the tools offered in strict mode, by name: their arguments are read back. */
function strictOriginals(
  tools: readonly ToolSchema[],
  formed: readonly FormedTool[],
): ReadonlyMap<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const [i, t] of formed.entries()) if (t.strict) out.set(t.name, tools[i]!.parameters);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Request mapping
// ---------------------------------------------------------------------------------------------------

function toWireMessage(m: Message): WireMessage {
  switch (m.role) {
    case 'system':
      return { role: 'system', content: m.content };
    case 'user': {
      const name = m.name === undefined ? '' : wireName(m.name);
      return name === '' ? { role: 'user', content: m.content } : { role: 'user', content: m.content, name };
    }
    case 'assistant': {
      const calls = m.toolCalls ?? [];
      // The API refuses an empty `tool_calls` array and a null content without tool calls.
      if (calls.length === 0) return { role: 'assistant', content: m.content ?? '' };
      return {
        role: 'assistant',
        content: m.content,
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  }
}

/** The API accepts participant names matching ^[a-zA-Z0-9_-]{1,64}$ and refuses the request otherwise. */
function wireName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
}

const wireTools = new WeakMap<FormedTool, OpenAI.Chat.ChatCompletionFunctionTool>();

/** Cached per formed tool, so every request of a run sends the same objects in the same key order. */
function toWireTool(t: FormedTool): OpenAI.Chat.ChatCompletionFunctionTool {
  let wire = wireTools.get(t);
  if (!wire) {
    wire = {
      type: 'function',
      function: {
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        ...(t.strict ? { strict: true } : {}),
      },
    };
    wireTools.set(t, wire);
  }
  return wire;
}

// ---------------------------------------------------------------------------------------------------
// Streamed replies: chunks folded into the shape of a whole completion
// ---------------------------------------------------------------------------------------------------

interface PartialCall {
  id?: string;
  type?: string;
  name: string;
  arguments: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * Reads a streamed completion, handing text deltas to `onText`, and returns it as a whole completion for
 * `toReply` (which checks it). Chunks are read with plain guards rather than a schema each: a long reply
 * is thousands of chunks and parsing each would cost more than the rest of the worker's step.
 */
async function streamed(
  client: OpenAI,
  body: WireStreamRequest,
  signal: AbortSignal,
  onText: (delta: string) => void,
): Promise<unknown> {
  const stream = await client.chat.completions.create(body, { signal });
  const fold = new StreamFold(onText);
  for await (const chunk of stream as AsyncIterable<unknown>) fold.chunk(chunk);
  return fold.completion();
}

/** The chunks of a streamed completion so far, folded into what a whole completion would say. */
class StreamFold {
  private content: string | null = null;
  private refusal: string | null = null;
  private finishReason: string | null = null;
  private model: string | undefined;
  private usage: unknown;
  private readonly calls: PartialCall[] = [];
  private sawChoice = false;

  constructor(private readonly onText: (delta: string) => void) {}

  chunk(chunk: unknown): void {
    if (!isRecord(chunk)) return;
    this.model ??= asString(chunk.model);
    if (isRecord(chunk.usage)) this.usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isRecord(choice)) return;
    this.sawChoice = true;
    this.finishReason = asString(choice.finish_reason) ?? this.finishReason;
    if (isRecord(choice.delta)) this.delta(choice.delta);
  }

  private delta(delta: Record<string, unknown>): void {
    const text = asString(delta.content);
    if (text) {
      this.content = (this.content ?? '') + text;
      this.onText(text);
    }
    const refused = asString(delta.refusal);
    if (refused) this.refusal = (this.refusal ?? '') + refused;
    if (!Array.isArray(delta.tool_calls)) return;
    for (const d of delta.tool_calls) {
      if (isRecord(d)) this.toolCallDelta(d);
    }
  }

  /** A piece of a tool call: its id and type come once, its name and arguments in parts. */
  private toolCallDelta(d: Record<string, unknown>): void {
    const index = typeof d.index === 'number' ? d.index : this.calls.length;
    const call = this.calls[index] ?? { name: '', arguments: '' };
    this.calls[index] = call;
    call.id ??= asString(d.id);
    call.type ??= asString(d.type);
    const fn = isRecord(d.function) ? d.function : {};
    call.name += asString(fn.name) ?? '';
    call.arguments += asString(fn.arguments) ?? '';
  }

  completion(): unknown {
    // A stream that ended without saying why the reply stopped was cut short (some servers close the
    // connection without an error): half a reply must not pass for a whole one.
    if (this.sawChoice && this.finishReason === null) {
      throw new ModelError('the model server ended the streamed reply before it was complete', {
        retryable: true,
      });
    }
    return {
      ...(this.model === undefined ? {} : { model: this.model }),
      // No choice at all is an unusable reply, and toReply says so.
      choices: this.sawChoice ? [{ finish_reason: this.finishReason, message: this.message() }] : [],
      usage: this.usage,
    };
  }

  private message(): unknown {
    return {
      content: this.content,
      refusal: this.refusal,
      tool_calls: this.calls
        .filter((c) => c !== undefined)
        .map((c) => ({
          id: c.id ?? null,
          type: c.type ?? null,
          function: { name: c.name, arguments: c.arguments },
        })),
    };
  }
}

// ---------------------------------------------------------------------------------------------------
// Reply mapping: checked with zod, because compatible servers differ from the SDK's types
// ---------------------------------------------------------------------------------------------------

const completionSchema = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        finish_reason: z.string().nullish(),
        message: z.object({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().nullish(),
                type: z.string().nullish(),
                function: z.object({ name: z.string(), arguments: z.unknown() }).nullish(),
              }),
            )
            .nullish(),
        }),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().nullish(),
      completion_tokens: z.number().nullish(),
      // OpenAI, vLLM and llama.cpp report the prompt tokens served from their prompt cache here.
      prompt_tokens_details: z.object({ cached_tokens: z.number().nullish() }).nullish(),
    })
    .nullish(),
});

function toReply(
  completion: unknown,
  requestedModel: string,
  baseURL: string,
  strict: ReadonlyMap<string, Record<string, unknown>>,
): ModelReply {
  const parsed = completionSchema.safeParse(completion);
  if (!parsed.success) {
    throw new ModelError(
      `model server at ${baseURL} returned an unusable chat completion: ${z.prettifyError(parsed.error)}`,
      { retryable: false, cause: parsed.error },
    );
  }
  const { message, finish_reason: finishReason } = parsed.data.choices[0]!;
  const toolCalls: ToolCall[] = [];
  for (const call of message.tool_calls ?? []) {
    // Only function calls: we offer no other tool type. Some compatible servers omit `type` or `id`;
    // a missing id is made up because the engine pairs every call with its result by id.
    if (!call.function || (call.type != null && call.type !== 'function')) continue;
    const args = call.function.arguments;
    const text = typeof args === 'string' ? args : JSON.stringify(args ?? {});
    const original = strict.get(call.function.name);
    toolCalls.push({
      id: call.id || `call_${randomUUID()}`,
      name: call.function.name,
      arguments: original ? fromStrictArguments(original, text) : text,
    });
  }
  const usage = parsed.data.usage;
  return {
    content: message.content ?? (toolCalls.length > 0 ? null : ''),
    toolCalls,
    // The engine tells the person about a refusal, a filtered or a cut-off reply (src/loop/reply-ending.ts).
    ...(message.refusal ? { refusal: message.refusal } : {}),
    ...(finishReason ? { finishReason } : {}),
    // No usage at all is left out; a missing count is 0. The engine charges its estimate for either.
    ...(usage && {
      usage: {
        inputTokens: usage.prompt_tokens ?? 0,
        outputTokens: usage.completion_tokens ?? 0,
        ...(usage.prompt_tokens_details?.cached_tokens
          ? { cachedInputTokens: usage.prompt_tokens_details.cached_tokens }
          : {}),
      },
    }),
    model: parsed.data.model || requestedModel,
  };
}

// ---------------------------------------------------------------------------------------------------
// Errors and aborts
// ---------------------------------------------------------------------------------------------------

/** Rejects as soon as `signal` aborts: the SDK's sleep before a retry does not watch the signal. */
function untilAborted<T>(work: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortedError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

function abortedError(signal: AbortSignal): ModelError {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
  return new ModelError(`model request aborted: ${reason}`, { retryable: false, cause: signal.reason });
}

interface Described {
  baseURL: string;
  maxRetries: number;
  timeoutMs: number;
  apiKey: string;
}

function toModelError(err: unknown, signal: AbortSignal, d: Described): ModelError {
  if (err instanceof ModelError) return err;
  if (signal.aborted || err instanceof APIUserAbortError) return abortedError(signal);
  const retried = d.maxRetries > 0 ? `, given up after ${d.maxRetries} retries` : '';
  if (err instanceof APIConnectionTimeoutError) {
    return new ModelError(`model server at ${d.baseURL} did not answer within ${d.timeoutMs} ms${retried}`, {
      retryable: true,
      cause: err,
    });
  }
  if (err instanceof APIConnectionError) {
    return new ModelError(`model server at ${d.baseURL} unreachable${retried}: ${describeCause(err)}`, {
      retryable: true,
      cause: err,
    });
  }
  if (err instanceof APIError && err.status !== undefined) {
    const { status } = err;
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    const sdkRetried = retryable && err.headers?.get('x-should-retry') !== 'false' ? retried : '';
    // The SDK's message starts with the status; keep only the server's words after it.
    const serverMessage = redactServerWords(err.message.replace(new RegExp(`^${status} `), ''), [d.apiKey]);
    return new ModelError(
      `model server at ${d.baseURL} answered HTTP ${status}${sdkRetried}: ${serverMessage}`,
      {
        status,
        retryable,
        cause: err,
        contextExceeded: status === 400 && isContextExceeded(err),
        serverMessage,
        ...(typeof err.code === 'string' ? { serverCode: err.code } : {}),
      },
    );
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ModelError(`model request to ${d.baseURL} failed: ${message}`, { retryable: false, cause: err });
}

/**
 * A refusal of a request longer than the model's window: OpenAI's code, or the wording of the
 * compatible servers that send none (vLLM, llama.cpp, Ollama and gateways).
 */
function isContextExceeded(err: APIError): boolean {
  if (err.code === 'context_length_exceeded') return true;
  return /context length|context window|maximum context|prompt is too long|too many tokens/i.test(
    err.message,
  );
}

function describeCause(err: APIConnectionError): string {
  const cause = err.cause instanceof Error ? (err.cause.cause ?? err.cause) : undefined;
  return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
}
