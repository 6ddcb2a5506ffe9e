/**
 * The Prometheus HTTP API reply (`/api/v1/query`, `/api/v1/query_range`) and its summary: per series
 * the labels, the number of samples, min/max/last (and first/last times for ranges), never the raw
 * samples. Series are sorted by their last value, highest first, and capped.
 */
import { z } from 'zod';

const sample = z.tuple([z.number(), z.string()]);
const histogramSample = z.tuple([z.number(), z.unknown()]);
const labels = z.record(z.string(), z.string());

const data = z.discriminatedUnion('resultType', [
  z.object({
    resultType: z.literal('vector'),
    result: z.array(
      z.object({ metric: labels, value: sample.optional(), histogram: histogramSample.optional() }),
    ),
  }),
  z.object({
    resultType: z.literal('matrix'),
    result: z.array(
      z.object({
        metric: labels,
        values: z.array(sample).optional(),
        histograms: z.array(histogramSample).optional(),
      }),
    ),
  }),
  z.object({ resultType: z.literal('scalar'), result: sample }),
  z.object({ resultType: z.literal('string'), result: sample }),
]);

export const prometheusReply = z.discriminatedUnion('status', [
  z.object({ status: z.literal('success'), data, warnings: z.array(z.string()).optional() }),
  z.object({ status: z.literal('error'), errorType: z.string(), error: z.string() }),
]);

type Data = z.output<typeof data>;

/** A number as the model should read it: 6 significant digits, or Prometheus's own NaN/±Inf text. */
type Value = number | string;

interface SeriesSummary {
  series: string;
  samples: number;
  last: Value | null;
  lastAt: string | null;
  min?: Value | null;
  max?: Value | null;
  firstAt?: string | null;
  /** Samples that are native histograms (not summarised further). */
  histogramSamples?: number;
}

interface QuerySummary {
  resultType: Data['resultType'];
  seriesTotal: number;
  seriesShown: number;
  series?: SeriesSummary[];
  /** For scalar and string results. */
  value?: Value;
  at?: string;
}

function parseValue(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  return Number(text);
}

function show(n: number | undefined): Value | null {
  if (n === undefined) return null;
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : '-Inf';
  return Number(n.toPrecision(6));
}

const iso = (seconds: number | undefined) =>
  seconds === undefined ? null : new Date(seconds * 1000).toISOString();

/** `name{a="1", b="2"}` in Prometheus's own notation. */
function seriesName(metric: Record<string, string>): string {
  const { __name__: name = '', ...rest } = metric;
  const pairs = Object.keys(rest)
    .sort()
    .map((k) => `${k}=${JSON.stringify(rest[k])}`);
  return pairs.length === 0 && name ? name : `${name}{${pairs.join(', ')}}`;
}

function summariseSeries(
  metric: Record<string, string>,
  samples: Array<[number, string]>,
  histograms: number,
  range: boolean,
) {
  const values = samples.map(([, v]) => parseValue(v));
  const finite = values.filter((v) => !Number.isNaN(v));
  const lastSample = samples[samples.length - 1];
  const summary: SeriesSummary = {
    series: seriesName(metric),
    samples: samples.length + histograms,
    last: show(values[values.length - 1]),
    lastAt: iso(lastSample?.[0]),
  };
  if (range) {
    summary.min = show(finite.length ? finite.reduce((m, v) => Math.min(m, v)) : undefined);
    summary.max = show(finite.length ? finite.reduce((m, v) => Math.max(m, v)) : undefined);
    summary.firstAt = iso(samples[0]?.[0]);
  }
  if (histograms > 0) summary.histogramSamples = histograms;
  return { summary, sortKey: values[values.length - 1] ?? Number.NaN };
}

/** Highest first; NaN (no value) last. */
function byValueDescending(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number(Number.isNaN(a)) - Number(Number.isNaN(b));
  return a === b ? 0 : b > a ? 1 : -1;
}

export function summarise(result: Data, maxSeries: number): QuerySummary {
  if (result.resultType === 'scalar' || result.resultType === 'string') {
    const [at, text] = result.result;
    const value = result.resultType === 'scalar' ? (show(parseValue(text)) ?? text) : text;
    return { resultType: result.resultType, seriesTotal: 0, seriesShown: 0, value, at: iso(at) ?? '' };
  }
  const all =
    result.resultType === 'vector'
      ? result.result.map((s) =>
          summariseSeries(s.metric, s.value ? [s.value] : [], s.histogram ? 1 : 0, false),
        )
      : result.result.map((s) => summariseSeries(s.metric, s.values ?? [], s.histograms?.length ?? 0, true));
  all.sort((a, b) => byValueDescending(a.sortKey, b.sortKey));
  const shown = all.slice(0, maxSeries).map((s) => s.summary);
  return { resultType: result.resultType, seriesTotal: all.length, seriesShown: shown.length, series: shown };
}
