/**
 * An OTLP/HTTP trace receiver for tests: accepts what @opentelemetry/exporter-trace-otlp-http sends
 * (POST /v1/traces, OTLP JSON) and keeps every span, flattened, with its resource's attributes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
const keyValues = z.array(z.object({ key: z.string(), value: z.custom<AnyValue>() })).optional();
const traceRequest = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: keyValues }).optional(),
      scopeSpans: z.array(
        z.object({
          spans: z.array(
            z.object({
              traceId: z.string(),
              spanId: z.string(),
              parentSpanId: z.string().optional(),
              name: z.string(),
              kind: z.number().optional(),
              startTimeUnixNano: z.union([z.string(), z.number()]),
              endTimeUnixNano: z.union([z.string(), z.number()]),
              attributes: keyValues,
              links: z.array(z.object({ traceId: z.string(), spanId: z.string() })).optional(),
              events: z.array(z.object({ name: z.string() })).optional(),
            }),
          ),
        }),
      ),
    }),
  ),
});

export type AttributeValue = string | number | boolean | AttributeValue[];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  resource: Record<string, AttributeValue>;
  links: { traceId: string; spanId: string }[];
  events: string[];
}

function attributeValue(v: AnyValue): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return (v.arrayValue?.values ?? []).map(attributeValue);
}

const attributesOf = (list: z.infer<typeof keyValues>) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, attributeValue(kv.value)]));

export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Raw request bodies, to check that some text appears nowhere at all. */
  bodies: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        !/json/.test(req.headers['content-type'] ?? '')
      ) {
        res.writeHead(415).end();
        return;
      }
      bodies.push(body);
      const parsed = traceRequest.parse(JSON.parse(body));
      for (const rs of parsed.resourceSpans) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind ?? 0,
              startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
              endMs: Number(BigInt(s.endTimeUnixNano) / 1_000_000n),
              attributes: attributesOf(s.attributes),
              resource,
              links: s.links ?? [],
              events: (s.events ?? []).map((e) => e.name),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
