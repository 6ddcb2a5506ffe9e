import type { Logger } from '../loop/tool-contract.js';
import type { RunTracer } from './run-tracer.js';
import { type OtlpProtocol, telemetrySettings } from './settings.js';

interface StartTelemetryOptions {
  /** service.name unless OTEL_SERVICE_NAME says otherwise (loopgate-bot, loopgate-worker, loopgate). */
  service: string;
  /**
   * Whether tracing is on, its protocol, service name and content capture are read from here; the
   * exporter reads its endpoint, headers, timeout and compression from `process.env` itself, so callers
   * pass `process.env`.
   */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** Removes configured secrets from text (the logs' redactor), for captured content. */
  redact: (text: string) => string;
}

let contextManagerRegistered = false;

/** The official OTLP/HTTP trace exporter of the protocol: protobuf (the specification's default) or JSON. */
async function exporterFor(protocol: OtlpProtocol) {
  const { OTLPTraceExporter } =
    protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter();
}

/**
 * Starts the OpenTelemetry SDK when the OTEL_EXPORTER_OTLP_* variables name an endpoint: a tracer
 * provider with the batch span processor (OTEL_BSP_* tune it) and the OTLP/HTTP exporter of
 * OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL, protobuf by default (it reads the endpoint, headers, timeout and
 * compression variables itself). Resolves to null when tracing is off: the SDK's modules are then not
 * even loaded (they are imported here, only when on), no context manager is registered, nothing costs.
 */
export async function startTelemetry(options: StartTelemetryOptions): Promise<RunTracer | null> {
  const settings = telemetrySettings(options.env);
  if (!settings.enabled) return null;
  const [
    { context },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    { defaultResource, resourceFromAttributes },
    { BasicTracerProvider, BatchSpanProcessor },
    { RunTracer },
    exporter,
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('./run-tracer.js'),
    exporterFor(settings.protocol),
  ]);
  // The active span must follow a job across its awaits for Slack calls to find it (RunTracer.within).
  // One manager per process: a second start (tests start several) keeps the first.
  if (!contextManagerRegistered) {
    contextManagerRegistered = context.setGlobalContextManager(
      new AsyncLocalStorageContextManager().enable(),
    );
  }
  const resource = defaultResource().merge(
    resourceFromAttributes({
      'service.name': settings.serviceName ?? options.service,
      'process.pid': process.pid,
    }),
  );
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  options.logger.info(
    {
      service: settings.serviceName ?? options.service,
      protocol: settings.protocol,
      captureContent: settings.captureContent,
    },
    'OpenTelemetry traces exported over OTLP/HTTP',
  );
  return new RunTracer({
    tracer: provider.getTracer('loopgate'),
    propagator: new W3CTraceContextPropagator(),
    captureContent: settings.captureContent,
    redact: options.redact,
    shutdown: () => provider.shutdown(),
    flush: () => provider.forceFlush(),
  });
}
