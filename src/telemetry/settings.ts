import { z } from 'zod';

/**
 * Whether traces are exported, read from the standard OpenTelemetry variables (the SDK's exporter reads
 * the endpoint, headers, timeout and compression itself, and OTEL_BSP_* tune its batching): on only when
 * an OTLP endpoint is named, so a process without one creates nothing and pays nothing. Empty values
 * count as unset, as everywhere in loopgate's environment.
 */
const unsetWhenEmpty = (v: unknown) => (v === '' ? undefined : v);

const telemetryEnvSchema = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(unsetWhenEmpty, z.url().optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.preprocess(unsetWhenEmpty, z.url().optional()),
  OTEL_SERVICE_NAME: z.preprocess(unsetWhenEmpty, z.string().optional()),
  /** The GenAI conventions' switch: message contents (the question, tool arguments, the answer). */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: z.preprocess(
    unsetWhenEmpty,
    z.enum(['true', 'false']).default('false'),
  ),
});

interface TelemetrySettings {
  enabled: boolean;
  captureContent: boolean;
  serviceName?: string;
}

/** Throws a ZodError naming the bad variable (loadEnv reports the same problems first, as a ConfigError). */
export function telemetrySettings(env: NodeJS.ProcessEnv): TelemetrySettings {
  const e = telemetryEnvSchema.parse(env);
  return {
    enabled: (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT) !== undefined,
    captureContent: e.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === 'true',
    ...(e.OTEL_SERVICE_NAME ? { serviceName: e.OTEL_SERVICE_NAME } : {}),
  };
}
