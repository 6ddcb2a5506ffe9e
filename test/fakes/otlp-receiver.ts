/**
 * An OTLP/HTTP trace receiver for tests: accepts what the official exporters send to POST /v1/traces,
 * protobuf (`application/x-protobuf`, @opentelemetry/exporter-trace-otlp-proto, the default) or JSON
 * (`application/json`, @opentelemetry/exporter-trace-otlp-http), and keeps every span, flattened, with its
 * resource's attributes, the same whichever way it came.
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

/**
 * Reads an OTLP ExportTraceServiceRequest in protobuf's wire format into the shape OTLP JSON has (ids as
 * hex, times as decimal strings), so both encodings go through the same checks below. The field numbers
 * are those of opentelemetry/proto/{collector/trace,trace,common,resource}/v1/*.proto; fields this
 * receiver does not keep are skipped by their wire type.
 */
class ProtoReader {
  private pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  /** Each field of the message: its number, wire type, and its value's reader. */
  *fields(): Generator<{ field: number; wire: number }> {
    while (this.pos < this.buf.length) {
      const tag = Number(this.varint());
      yield { field: tag >>> 3, wire: tag & 7 };
    }
  }

  varint(): bigint {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const byte = this.buf[this.pos++] as number;
      result |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return result;
    }
  }

  bytes(): Uint8Array {
    const length = Number(this.varint());
    if (this.pos + length > this.buf.length) throw new Error('truncated length-delimited field');
    const out = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  message(): ProtoReader {
    return new ProtoReader(this.bytes());
  }

  string(): string {
    return Buffer.from(this.bytes()).toString('utf8');
  }

  hex(): string {
    return Buffer.from(this.bytes()).toString('hex');
  }

  fixed64(): bigint {
    const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8);
    this.pos += 8;
    return view.getBigUint64(0, true);
  }

  double(): number {
    const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8);
    this.pos += 8;
    return view.getFloat64(0, true);
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

/** AnyValue: 1 string, 2 bool, 3 int64, 4 double, 5 ArrayValue (1 repeated AnyValue). */
function protoAnyValue(r: ProtoReader): AnyValue {
  const v: AnyValue = {};
  for (const { field, wire } of r.fields()) {
    if (field === 1 && wire === 2) v.stringValue = r.string();
    else if (field === 2 && wire === 0) v.boolValue = r.varint() !== 0n;
    else if (field === 3 && wire === 0) v.intValue = BigInt.asIntN(64, r.varint()).toString();
    else if (field === 4 && wire === 1) v.doubleValue = r.double();
    else if (field === 5 && wire === 2) {
      const values: AnyValue[] = [];
      const array = r.message();
      for (const f of array.fields()) {
        if (f.field === 1 && f.wire === 2) values.push(protoAnyValue(array.message()));
        else array.skip(f.wire);
      }
      v.arrayValue = { values };
    } else r.skip(wire);
  }
  return v;
}

/** KeyValue: 1 key, 2 value. */
function protoKeyValue(r: ProtoReader): { key: string; value: AnyValue } {
  let key = '';
  let value: AnyValue = {};
  for (const { field, wire } of r.fields()) {
    if (field === 1 && wire === 2) key = r.string();
    else if (field === 2 && wire === 2) value = protoAnyValue(r.message());
    else r.skip(wire);
  }
  return { key, value };
}

/** Span: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 7/8 times, 9 attributes, 11 events, 13 links. */
function protoSpan(r: ProtoReader) {
  const span: Record<string, unknown> & { attributes: unknown[]; events: unknown[]; links: unknown[] } = {
    attributes: [],
    events: [],
    links: [],
  };
  for (const { field, wire } of r.fields()) {
    if (field === 1 && wire === 2) span.traceId = r.hex();
    else if (field === 2 && wire === 2) span.spanId = r.hex();
    else if (field === 4 && wire === 2) span.parentSpanId = r.hex();
    else if (field === 5 && wire === 2) span.name = r.string();
    else if (field === 6 && wire === 0) span.kind = Number(r.varint());
    else if (field === 7 && wire === 1) span.startTimeUnixNano = r.fixed64().toString();
    else if (field === 8 && wire === 1) span.endTimeUnixNano = r.fixed64().toString();
    else if (field === 9 && wire === 2) span.attributes.push(protoKeyValue(r.message()));
    else if (field === 11 && wire === 2) {
      // Event: 2 name.
      const event = r.message();
      let name = '';
      for (const f of event.fields()) {
        if (f.field === 2 && f.wire === 2) name = event.string();
        else event.skip(f.wire);
      }
      span.events.push({ name });
    } else if (field === 13 && wire === 2) {
      // Link: 1 trace_id, 2 span_id.
      const link = r.message();
      const ids = { traceId: '', spanId: '' };
      for (const f of link.fields()) {
        if (f.field === 1 && f.wire === 2) ids.traceId = link.hex();
        else if (f.field === 2 && f.wire === 2) ids.spanId = link.hex();
        else link.skip(f.wire);
      }
      span.links.push(ids);
    } else r.skip(wire);
  }
  return span;
}

/** ExportTraceServiceRequest: 1 ResourceSpans (1 Resource (1 attributes), 2 ScopeSpans (2 spans)). */
function decodeProtobufRequest(body: Uint8Array): unknown {
  const resourceSpans: unknown[] = [];
  const request = new ProtoReader(body);
  for (const { field, wire } of request.fields()) {
    if (field !== 1 || wire !== 2) {
      request.skip(wire);
      continue;
    }
    const rs = request.message();
    const attributes: unknown[] = [];
    const scopeSpans: { spans: unknown[] }[] = [];
    for (const f of rs.fields()) {
      if (f.field === 1 && f.wire === 2) {
        const resource = rs.message();
        for (const g of resource.fields()) {
          if (g.field === 1 && g.wire === 2) attributes.push(protoKeyValue(resource.message()));
          else resource.skip(g.wire);
        }
      } else if (f.field === 2 && f.wire === 2) {
        const ss = rs.message();
        const spans: unknown[] = [];
        for (const g of ss.fields()) {
          if (g.field === 2 && g.wire === 2) spans.push(protoSpan(ss.message()));
          else ss.skip(g.wire);
        }
        scopeSpans.push({ spans });
      } else rs.skip(f.wire);
    }
    resourceSpans.push({ resource: { attributes }, scopeSpans });
  }
  return { resourceSpans };
}

/** The encodings the exporters send, by content type. */
export type OtlpEncoding = 'protobuf' | 'json';

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
  /**
   * Raw request bodies as text, to check that some text appears nowhere at all (protobuf keeps strings
   * as their UTF-8 bytes, so a search works in both encodings).
   */
  bodies: string[];
  /** The encoding of each request received, in order. */
  encodings: OtlpEncoding[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const encodings: OtlpEncoding[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const type = req.headers['content-type'] ?? '';
      const encoding: OtlpEncoding | null =
        type === 'application/x-protobuf' ? 'protobuf' : type === 'application/json' ? 'json' : null;
      if (req.method !== 'POST' || req.url !== '/v1/traces' || encoding === null) {
        res.writeHead(415).end();
        return;
      }
      const body = raw.toString('utf8');
      bodies.push(body);
      encodings.push(encoding);
      const parsed = traceRequest.parse(encoding === 'json' ? JSON.parse(body) : decodeProtobufRequest(raw));
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
      // An empty ExportTraceServiceResponse: `{}` in JSON, no bytes in protobuf.
      if (encoding === 'json') res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    encodings,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
