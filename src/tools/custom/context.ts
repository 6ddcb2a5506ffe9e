/**
 * What a custom tool receives with each call: the engine's context plus its declared secrets and the
 * guarded HTTP client. Built around each call by the wrapper in wrap.ts, so the engine knows nothing of it.
 */
import type { ToolContext as EngineContext } from '../../loop/tool-contract.js';
import { decodeBody } from '../net/body-format.js';
import { type AllowRule, guardedRequest } from '../net/guarded-request.js';
import type { Lookup } from '../net/lookup.js';
import { timeLimit } from '../net/time-limit.js';
import type { HttpRequestOptions, HttpResponse, ToolContext, ToolHttp } from './tool-api.js';

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BYTES = 1_000_000;

/** The HTTP client of one call: the operator's allowlist for this tool's entry, the call's signal. */
function toolHttp(rules: readonly AllowRule[], lookup: Lookup, signal: AbortSignal): ToolHttp {
  const request = async (url: string, options: HttpRequestOptions = {}): Promise<HttpResponse> => {
    const method = (options.method ?? 'GET').toUpperCase();
    const headers = { ...options.headers };
    let body: string | undefined;
    if (typeof options.body === 'string') body = options.body;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const reply = await guardedRequest(
      {
        method,
        url,
        headers,
        ...(body === undefined ? {} : { body }),
        limit: timeLimit(signal, options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
        maxRedirects: options.maxRedirects ?? (method === 'GET' ? 5 : 0),
      },
      { rules, lookup },
    );
    const contentType = reply.headers['content-type'];
    const text = decodeBody(reply.body, typeof contentType === 'string' ? contentType : undefined);
    return {
      url: reply.url,
      status: reply.status,
      statusText: reply.statusText,
      ok: reply.status >= 200 && reply.status < 300,
      headers: { ...reply.headers },
      text: () => text,
      json: () => JSON.parse(text) as unknown,
    };
  };
  return { request, get: (url, options) => request(url, { ...options, method: 'GET' }) };
}

interface ContextSource {
  tool: string;
  /** Declared secrets with their values, read at start-up. */
  secrets: ReadonlyMap<string, string>;
  rules: readonly AllowRule[];
  lookup: Lookup;
}

export function customContext(ctx: EngineContext, source: ContextSource): ToolContext {
  return {
    ...ctx,
    secret(name: string): string {
      const value = source.secrets.get(name);
      if (value === undefined) {
        throw new Error(`${source.tool} read secret ${name}, which it does not list in secrets: [...]`);
      }
      return value;
    },
    http: toolHttp(source.rules, source.lookup, ctx.signal),
  };
}
