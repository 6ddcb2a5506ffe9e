import { afterEach, describe, expect, it } from 'vitest';
import { createPrometheusQuery, prometheusSettings } from '../../src/tools/prometheus-query.js';
import {
  errorReply,
  type FakePrometheus,
  matrixReply,
  startFakePrometheus,
  vectorReply,
} from '../fakes/prometheus-server.js';
import { parseArgs, run } from './tool-harness.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
let prom: FakePrometheus | undefined;

afterEach(async () => {
  await prom?.close();
  prom = undefined;
});

async function setup(answer: Parameters<typeof startFakePrometheus>[0], extra: Record<string, unknown> = {}) {
  prom = await startFakePrometheus(answer);
  const settings = prometheusSettings.parse({ url: prom.url, ...extra });
  return createPrometheusQuery(settings, { env: { PROM_AUTH: 'Basic c2VjcmV0' }, clock: { now: () => NOW } });
}

describe('prometheus_query', () => {
  it('runs an instant query at now and summarises each series', async () => {
    const tool = await setup(() =>
      vectorReply([
        { metric: { __name__: 'up', job: 'api', instance: 'a:9100' }, value: [1772366400, '1'] },
        { metric: { __name__: 'up', job: 'db', instance: 'b:9100' }, value: [1772366400, '0'] },
      ]),
    );
    const out = (await run(tool, { query: 'up' })) as Record<string, unknown>;
    expect(prom?.queries[0]).toEqual({
      endpoint: 'query',
      params: { query: 'up', time: '2026-03-01T12:00:00.000Z' },
    });
    expect(out).toMatchObject({ query: 'up', resultType: 'vector', seriesTotal: 2, seriesShown: 2 });
    expect(out.series).toEqual([
      { series: 'up{instance="a:9100", job="api"}', samples: 1, last: 1, lastAt: '2026-03-01T12:00:00.000Z' },
      { series: 'up{instance="b:9100", job="db"}', samples: 1, last: 0, lastAt: '2026-03-01T12:00:00.000Z' },
    ]);
  });

  it('runs a range query with min/max/last and first/last times', async () => {
    const tool = await setup(() =>
      matrixReply([
        {
          metric: { route: '/pay' },
          values: [
            [1772362800, '0.25'],
            [1772364600, '1.123456789'],
            [1772366400, '0.5'],
          ],
        },
        { metric: { route: '/search' }, values: [[1772366400, 'NaN']] },
      ]),
    );
    const out = (await run(tool, { query: 'rate(x[5m])', range: { lookback: '1h', step: '30m' } })) as Record<
      string,
      unknown
    >;
    expect(prom?.queries[0]).toEqual({
      endpoint: 'query_range',
      params: {
        query: 'rate(x[5m])',
        start: '2026-03-01T11:00:00.000Z',
        end: '2026-03-01T12:00:00.000Z',
        step: '1800s',
      },
    });
    expect(out.range).toEqual({
      start: '2026-03-01T11:00:00.000Z',
      end: '2026-03-01T12:00:00.000Z',
      step: '1800s',
    });
    expect(out.series).toEqual([
      {
        series: '{route="/pay"}',
        samples: 3,
        last: 0.5,
        lastAt: '2026-03-01T12:00:00.000Z',
        min: 0.25,
        max: 1.12346,
        firstAt: '2026-03-01T11:00:00.000Z',
      },
      {
        series: '{route="/search"}',
        samples: 1,
        last: 'NaN',
        lastAt: '2026-03-01T12:00:00.000Z',
        min: null,
        max: null,
        firstAt: '2026-03-01T12:00:00.000Z',
      },
    ]);
  });

  it('picks a default step of about 120 points', async () => {
    const tool = await setup(() => matrixReply([]));
    await run(tool, { query: 'up', range: { lookback: '6h' } });
    expect(prom?.queries[0]?.params.step).toBe('180s');
  });

  it('caps the series, keeping the highest values', async () => {
    const series = Array.from({ length: 30 }, (_, i) => ({
      metric: { pod: `p${i}` },
      value: [1772366400, String(i)] as [number, string],
    }));
    const tool = await setup(() => vectorReply(series), { maxSeries: 3 });
    const out = (await run(tool, { query: 'x' })) as {
      seriesTotal: number;
      seriesShown: number;
      series: Array<{ last: number }>;
    };
    expect(out.seriesTotal).toBe(30);
    expect(out.seriesShown).toBe(3);
    expect(out.series.map((s) => s.last)).toEqual([29, 28, 27]);
  });

  it('reports a scalar', async () => {
    const tool = await setup(() => ({
      body: { status: 'success', data: { resultType: 'scalar', result: [1772366400, '42'] } },
    }));
    expect(await run(tool, { query: 'scalar(1)' })).toMatchObject({ resultType: 'scalar', value: 42 });
  });

  it("passes Prometheus's own error on", async () => {
    const tool = await setup(() => errorReply(400, 'bad_data', 'parse error at char 5: unexpected "}"'));
    await expect(run(tool, { query: 'up{' })).rejects.toMatchObject({
      code: 'prometheus_error',
      message: expect.stringContaining('parse error at char 5'),
    });
  });

  it.each([
    ['not JSON', { body: '<html>500 Internal Error</html>', contentType: 'text/html', status: 500 }],
    [
      'JSON of another shape',
      { body: { status: 'success', data: { resultType: 'vector', result: [{ value: 'x' }] } } },
    ],
    ['an unknown result type', { body: { status: 'success', data: { resultType: 'table', result: [] } } }],
  ])('refuses a malformed reply: %s', async (_label, answer) => {
    const tool = await setup(() => answer);
    await expect(run(tool, { query: 'up' })).rejects.toMatchObject({ code: 'prometheus_bad_reply' });
  });

  it('a busy or unreachable Prometheus (502/503) is a transient failure, with its Retry-After', async () => {
    const tool = await setup(() => ({
      body: '<html>503 Service Unavailable</html>',
      contentType: 'text/html',
      status: 503,
      headers: { 'retry-after': '2' },
    }));
    await expect(run(tool, { query: 'up' })).rejects.toMatchObject({
      code: 'http_status',
      transient: true,
      retryAfterMs: 2_000,
    });
  });

  it('sends configured headers from the environment', async () => {
    const tool = await setup(() => vectorReply([]), { headersEnv: { Authorization: 'PROM_AUTH' } });
    await run(tool, { query: 'up' });
    expect(prom?.requests[0]?.headers.authorization).toBe('Basic c2VjcmV0');
  });

  it('keeps a base path of the configured URL', async () => {
    prom = await startFakePrometheus(() => vectorReply([]));
    const tool = createPrometheusQuery(prometheusSettings.parse({ url: `${prom.url}/prometheus` }), {
      env: {},
      clock: { now: () => NOW },
    });
    await run(tool, { query: 'up' });
    expect(prom.requests[0]?.path).toMatch(/^\/prometheus\/api\/v1\/query\?/);
  });

  it('validates durations and times in the arguments', async () => {
    const tool = await setup(() => vectorReply([]));
    expect(() => parseArgs(tool, { query: 'up', range: { lookback: 'an hour' } })).toThrow(/duration/);
    expect(() => parseArgs(tool, { query: 'up', time: 'yesterday' })).toThrow(/RFC 3339/);
    await expect(run(tool, { query: 'up', range: { lookback: '40d' } })).rejects.toMatchObject({
      code: 'range_too_long',
    });
  });
});
