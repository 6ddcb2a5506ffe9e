/**
 * A `fetch` for the SDKs loopgate's worker talks through (OpenAI's and Slack's Web API client), over
 * node:http(s) with kept-alive connections, for bodies that are strings or bytes and replies read whole.
 * Node's built-in fetch (undici with web streams) was the largest share of a worker's CPU under load:
 * every model call and Slack call went through it. Anything this one does not handle (a streamed or
 * multipart body, a redirect to follow) goes to the built-in fetch unchanged.
 *
 * Contract, as the SDKs use fetch: resolves once the whole reply is read, with a Response-shaped object
 * (status, statusText, ok, url, headers to read, text/json/arrayBuffer; `body` is null); rejects with a
 * DOMException named `AbortError` when `init.signal` aborts (before or during the request), and with a
 * TypeError carrying the cause on a network failure, as fetch does. A successful `text/event-stream`
 * reply (a streamed model reply) is the exception: it resolves at its headers with `body` a stream of
 * the reply as it arrives, which an abort then ends with an error.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';

const DECODERS: Record<string, (bytes: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

interface BufferedFetchOptions {
  /** Connections kept per host. Default 256. */
  maxSockets?: number;
  /** What cannot be sent from a buffer goes here. Default the built-in fetch. */
  fallback?: typeof fetch;
}

/** The subset of Response the SDKs read. */
class BufferedResponse {
  readonly ok: boolean;
  readonly body = null;
  readonly bodyUsed = false;
  readonly redirected = false;
  readonly type = 'basic';

  constructor(
    readonly url: string,
    readonly status: number,
    readonly statusText: string,
    readonly headers: ReplyHeaders,
    private readonly bytes: Buffer,
  ) {
    this.ok = status >= 200 && status < 300;
  }

  async text(): Promise<string> {
    return this.bytes.toString('utf8');
  }
  async json(): Promise<unknown> {
    return JSON.parse(this.bytes.toString('utf8'));
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    const copy = new ArrayBuffer(this.bytes.byteLength);
    new Uint8Array(copy).set(this.bytes);
    return copy;
  }
  clone(): BufferedResponse {
    return new BufferedResponse(this.url, this.status, this.statusText, this.headers, this.bytes);
  }
}

function bodyBytes(body: unknown): string | Uint8Array | null | undefined {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof URLSearchParams) return body.toString();
  return undefined;
}

function abortError(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError'
    ? reason
    : new DOMException('This operation was aborted', 'AbortError');
}

/**
 * The reply's headers with the read side of `Headers` (get, has, forEach, entries, keys, values), over
 * Node's parsed headers: building a WHATWG Headers object per reply cost more than the SDKs' reads of it.
 */
class ReplyHeaders {
  constructor(private readonly raw: IncomingMessage['headers']) {}

  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
  has(name: string): boolean {
    return this.raw[name.toLowerCase()] !== undefined;
  }
  forEach(callback: (value: string, name: string, headers: ReplyHeaders) => void): void {
    for (const [name, value] of this.entries()) callback(value, name, this);
  }
  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.raw).sort()) yield [name, this.get(name) ?? ''];
  }
  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name;
  }
  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/** A successful, uncompressed Server-Sent Events reply: handed over as a stream, not read whole. */
function isEventStream(res: IncomingMessage): boolean {
  const status = res.statusCode ?? 0;
  const type = String(res.headers['content-type'] ?? '').toLowerCase();
  return (
    status >= 200 && status < 300 && type.startsWith('text/event-stream') && !res.headers['content-encoding']
  );
}

/** A Response-shaped object whose `body` is the reply's stream (what the SDKs read a stream from). */
function streamingResponse(
  url: string,
  res: IncomingMessage,
  signal: AbortSignal | undefined,
  done: () => void,
) {
  const abort = () => res.destroy(signal ? (abortError(signal) as Error) : undefined);
  signal?.addEventListener('abort', abort, { once: true });
  res.once('close', () => {
    done();
    signal?.removeEventListener('abort', abort);
  });
  const status = res.statusCode ?? 0;
  const body = Readable.toWeb(res) as ReadableStream<Uint8Array>;
  return {
    url,
    status,
    statusText: res.statusMessage ?? '',
    ok: true,
    headers: new ReplyHeaders(res.headers),
    body,
    bodyUsed: false,
    redirected: false,
    type: 'basic',
    async text() {
      return new Response(body).text();
    },
    async json() {
      return JSON.parse(await new Response(body).text());
    },
  };
}

/** Request headers as Node takes them, from whatever HeadersInit the SDK passed. */
function requestHeaders(init: RequestInit['headers']): Record<string, string> {
  const headers: Record<string, string> = {};
  if (init === undefined) return headers;
  if (init instanceof Headers) {
    init.forEach((value, name) => {
      headers[name] = value;
    });
  } else if (Array.isArray(init)) {
    for (const [name, value] of init) if (name !== undefined) headers[name.toLowerCase()] = String(value);
  } else {
    for (const [name, value] of Object.entries(init)) headers[name.toLowerCase()] = String(value);
  }
  return headers;
}

export function createBufferedFetch(opts: BufferedFetchOptions = {}): typeof fetch {
  const fallback = opts.fallback ?? globalThis.fetch;
  const agentOptions = { keepAlive: true, maxSockets: opts.maxSockets ?? 256, scheduling: 'lifo' as const };
  const http = new HttpAgent(agentOptions);
  const https = new HttpsAgent(agentOptions);

  const buffered = (input: Parameters<typeof fetch>[0], init: RequestInit = {}): Promise<Response> => {
    const body = bodyBytes(init.body);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : null;
    if (body === undefined || url === null || init.redirect === 'follow') return fallback(input, init);
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:') return fallback(input, init);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const headers = requestHeaders(init.headers);
    if (body !== null) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise<Response>((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(target, {
        method: init.method ?? 'GET',
        headers,
        agent: secure ? https : http,
      });
      const onAbort = () => {
        req.destroy();
        reject(abortError(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      req.once('error', (err) => {
        done();
        reject(new TypeError('fetch failed', { cause: err }));
      });
      req.once('response', (res) => {
        if (isEventStream(res)) {
          // Read as it arrives (a streamed model reply); an abort later destroys it mid-way.
          resolve(streamingResponse(url, res, signal, done) as unknown as Response);
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('error', (err) => {
          done();
          reject(new TypeError('fetch failed', { cause: err }));
        });
        res.once('end', () => {
          done();
          const raw = Buffer.concat(chunks);
          const encoding = String(res.headers['content-encoding'] ?? '').toLowerCase();
          const decode = DECODERS[encoding];
          (decode ? decode(raw) : Promise.resolve(raw)).then(
            (bytes) => {
              const status = res.statusCode ?? 0;
              const response = new BufferedResponse(
                url,
                status,
                res.statusMessage ?? '',
                new ReplyHeaders(res.headers),
                bytes,
              );
              resolve(response as unknown as Response);
            },
            (err: unknown) => reject(new TypeError('fetch failed', { cause: err })),
          );
        });
      });
      req.end(body ?? undefined);
    });
  };
  return buffered as typeof fetch;
}
