import { z } from 'zod';

/**
 * Whether traces are exported, read from the standard OpenTelemetry variables (the SDK's exporter reads
 * the endpoint, headers, timeout and compression itself, and OTEL_BSP_* tune its batching): on only when
 * an OTLP endpoint is named, so a process without one creates nothing and pays nothing. Empty values
 * count as unset, as everywhere in loopgate's environment.
 */
const unsetWhenEmpty = (v: unknown) => (v === '' ? undefined : v);

/** The OTLP transports loopgate exports traces with: `http/protobuf` is the specification's default. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** What OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL may say (config/env.ts quotes it in its errors too). */
export const OTLP_PROTOCOL_EXPECTED =
  'http/protobuf (the default) or http/json; grpc is not supported (loopgate sends traces over OTLP/HTTP)';

/** grpc, the specification's third value, is refused by name rather than silently sent as something else. */
const protocol = z.preprocess(
  unsetWhenEmpty,
  z
    .enum(OTLP_PROTOCOLS, {
      error: (issue) =>
        `${JSON.stringify(issue.input)} is not supported, only http/protobuf (the default) or http/json (loopgate sends traces over OTLP/HTTP)`,
    })
    .optional(),
);

const telemetryEnvSchema = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(unsetWhenEmpty, z.url().optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.preprocess(unsetWhenEmpty, z.url().optional()),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
  OTEL_SERVICE_NAME: z.preprocess(unsetWhenEmpty, z.string().optional()),
  /** The GenAI conventions' switch: message contents (the question, tool arguments, the answer). */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: z.preprocess(
    unsetWhenEmpty,
    z.enum(['true', 'false']).default('false'),
  ),
});

interface TelemetrySettings {
  enabled: boolean;
  /** The signal's own variable, else the general one, else the specification's default http/protobuf. */
  protocol: OtlpProtocol;
  captureContent: boolean;
  serviceName?: string;
}

/**
 * Throws an Error naming each bad variable, `NAME: problem` (loadEnv reports the same problems first, as
 * a ConfigError, when a process starts).
 */
export function telemetrySettings(env: NodeJS.ProcessEnv): TelemetrySettings {
  const parsed = telemetryEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  }
  const e = parsed.data;
  return {
    enabled: (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT) !== undefined,
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    captureContent: e.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === 'true',
    ...(e.OTEL_SERVICE_NAME ? { serviceName: e.OTEL_SERVICE_NAME } : {}),
  };
}
