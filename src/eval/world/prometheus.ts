/**
 * The world's Prometheus HTTP API: a query is answered by the first metric of the spec whose pattern
 * matches it, each series at its current value (its `healthyValue` once its service is healthy). A flaky
 * Prometheus answers its `prometheusSequence` of errors first.
 */
import type { WorldSpec } from '../task-schema.js';
import type { HttpAnswer, WorldState } from './world-state.js';

type Series = WorldSpec['metrics'][number]['series'][number];

function currentValue(series: Series, state: WorldState): number {
  if (series.healthyValue === undefined || !series.service) return series.value;
  const svc = state.services[series.service]?.[series.env ?? 'prod'];
  return svc?.health === 'ok' ? series.healthyValue : series.value;
}

/** Seconds since the epoch, as Prometheus writes sample times. */
const epoch = (iso: string | undefined, fallback: number) =>
  iso === undefined || Number.isNaN(Date.parse(iso)) ? fallback : Date.parse(iso) / 1000;

export function prometheusAnswer(
  spec: WorldSpec,
  state: WorldState,
  endpoint: 'query' | 'query_range',
  params: Record<string, string>,
): HttpAnswer {
  const scripted = spec.prometheusSequence[state.prometheusQueries];
  state.prometheusQueries += 1;
  if (scripted !== undefined && scripted >= 400) {
    return { status: scripted, type: 'text/plain', body: 'Service Unavailable' };
  }
  const query = params.query ?? '';
  const metric = spec.metrics.find((m) => new RegExp(m.query, 'i').test(query));
  const series = metric?.series ?? [];
  const now = Date.now() / 1000;
  if (endpoint === 'query') {
    const at = epoch(params.time, now);
    const result = series.map((s) => ({ metric: s.labels, value: [at, String(currentValue(s, state))] }));
    return {
      status: 200,
      type: 'application/json',
      body: { status: 'success', data: { resultType: 'vector', result } },
    };
  }
  const end = epoch(params.end, now);
  const start = epoch(params.start, end - 3600);
  const points = 6;
  const result = series.map((s) => ({
    metric: s.labels,
    values: Array.from({ length: points }, (_, i) => [
      start + ((end - start) * i) / (points - 1),
      // The last sample carries the current value; earlier ones the value before any fix.
      String(i === points - 1 ? currentValue(s, state) : s.value),
    ]),
  }));
  return {
    status: 200,
    type: 'application/json',
    body: { status: 'success', data: { resultType: 'matrix', result } },
  };
}
