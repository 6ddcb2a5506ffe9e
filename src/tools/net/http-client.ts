/**
 * One HTTP exchange with node:http(s), bounded in size and time. No redirects are followed here, no
 * connection is pooled (`agent: false`), and when `addresses` is given the socket connects only to those
 * already-checked addresses: the host name is not resolved a second time, so a DNS answer that changes
 * between the check and the connection (rebinding) cannot redirect the request. TLS still verifies the
 * certificate against the host name.
 */
import { once } from 'node:events';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { classifyFailure } from '../../loop/retry.js';
import { RequestTimeoutError, ResponseTooLargeError, ToolError } from '../errors.js';
import type { ResolvedAddress } from './lookup.js';
import type { TimeLimit } from './time-limit.js';

interface HttpExchange {
  method: string;
  url: URL;
  headers?: Record<string, string>;
  body?: string;
  limit: TimeLimit;
  /** Bodies larger than this are refused with `response_too_large`; reading stops there. */
  maxBytes: number;
  /** Connect only to these addresses (checked beforehand); omitted: the system resolver decides. */
  addresses?: readonly ResolvedAddress[];
}

export interface HttpReply {
  url: string;
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const first = addresses[0];
    if (!first) {
      callback(new Error('no checked address to connect to'), '', 4);
      return;
    }
    if (options.all)
      callback(
        null,
        addresses.map((a) => ({ address: a.address, family: a.family })),
      );
    else callback(null, first.address, first.family);
  };
}

async function readBounded(response: IncomingMessage, exchange: HttpExchange): Promise<Buffer> {
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > exchange.maxBytes) {
    response.destroy();
    throw new ResponseTooLargeError(exchange.url.href, exchange.maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > exchange.maxBytes) {
      response.destroy();
      throw new ResponseTooLargeError(exchange.url.href, exchange.maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function translate(err: unknown, exchange: HttpExchange): unknown {
  if (err instanceof ToolError) return err;
  if (exchange.limit.expired()) return new RequestTimeoutError(exchange.url.href, exchange.limit.timeoutMs);
  if (exchange.limit.signal.aborted) return exchange.limit.signal.reason;
  const code = (err as { code?: unknown }).code;
  const detail = typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
  return new ToolError('request_failed', `${exchange.method} ${exchange.url.href} failed: ${detail}`, {
    transient: classifyFailure(err).transient,
    cause: err,
  });
}

export async function exchange(ex: HttpExchange): Promise<HttpReply> {
  const client = ex.url.protocol === 'https:' ? https : http;
  const headers: Record<string, string> = { 'user-agent': 'loopgate', ...ex.headers };
  if (ex.body !== undefined) headers['content-length'] = String(Buffer.byteLength(ex.body));
  const request = client.request(ex.url, {
    method: ex.method,
    headers,
    agent: false,
    signal: ex.limit.signal,
    ...(ex.addresses ? { lookup: pinnedLookup(ex.addresses) } : {}),
  });
  // Errors surface through `once` or the response stream; this keeps a late one from going unhandled.
  request.on('error', () => {});
  try {
    request.end(ex.body);
    const [response] = (await once(request, 'response', { signal: ex.limit.signal })) as [IncomingMessage];
    const body = await readBounded(response, ex);
    return {
      url: ex.url.href,
      status: response.statusCode ?? 0,
      statusText: response.statusMessage ?? '',
      headers: response.headers,
      body,
    };
  } catch (err) {
    request.destroy();
    throw translate(err, ex);
  }
}
