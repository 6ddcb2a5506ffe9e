/**
 * A fake Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`) on 127.0.0.1: each request's
 * endpoint and parameters are recorded and answered by the test's `answer` function (default: an empty
 * vector). Builders make well-formed replies; tests write malformed ones by hand.
 */
import { type HttpFixture, startHttpFixture } from './http-fixtures.js';

export interface PrometheusRequest {
  endpoint: 'query' | 'query_range' | 'other';
  params: Record<string, string>;
}

export interface FakeAnswer {
  status?: number;
  contentType?: string;
  /** Extra response headers, e.g. `retry-after`. */
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as it is. */
  body: unknown;
}

export interface FakePrometheus extends HttpFixture {
  queries: PrometheusRequest[];
}

export async function startFakePrometheus(
  answer: (req: PrometheusRequest) => FakeAnswer = () => vectorReply([]),
): Promise<FakePrometheus> {
  const queries: PrometheusRequest[] = [];
  const fixture = await startHttpFixture((req, res) => {
    const url = new URL(req.path, 'http://fake');
    const endpoint = url.pathname.endsWith('/api/v1/query_range')
      ? 'query_range'
      : url.pathname.endsWith('/api/v1/query')
        ? 'query'
        : 'other';
    const request: PrometheusRequest = { endpoint, params: Object.fromEntries(url.searchParams) };
    queries.push(request);
    const out = answer(request);
    const text = typeof out.body === 'string' ? out.body : JSON.stringify(out.body);
    res.writeHead(out.status ?? 200, {
      'content-type': out.contentType ?? 'application/json',
      ...out.headers,
    });
    res.end(text);
  });
  return { ...fixture, queries };
}

export function vectorReply(
  series: Array<{ metric: Record<string, string>; value: [number, string] }>,
): FakeAnswer {
  return { body: { status: 'success', data: { resultType: 'vector', result: series } } };
}

export function matrixReply(
  series: Array<{ metric: Record<string, string>; values: Array<[number, string]> }>,
): FakeAnswer {
  return { body: { status: 'success', data: { resultType: 'matrix', result: series } } };
}

export function errorReply(status: number, errorType: string, error: string): FakeAnswer {
  return { status, body: { status: 'error', errorType, error } };
}
