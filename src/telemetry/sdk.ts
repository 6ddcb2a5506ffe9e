import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../loop/tool-contract.js';
import { RunTracer } from './run-tracer.js';
import { telemetrySettings } from './settings.js';

interface StartTelemetryOptions {
  /** service.name unless OTEL_SERVICE_NAME says otherwise (loopgate-bot, loopgate-worker, loopgate). */
  service: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** Removes configured secrets from text (the logs' redactor), for captured content. */
  redact: (text: string) => string;
}

let contextManagerRegistered = false;

/**
 * The active span must follow a job across its awaits for Slack calls to find it (RunTracer.within).
 * One manager per process: a second start (tests start several) keeps the first.
 */
function registerContextManager(): void {
  if (contextManagerRegistered) return;
  contextManagerRegistered = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/**
 * Starts the OpenTelemetry SDK when the OTEL_EXPORTER_OTLP_* variables name an endpoint: a tracer
 * provider with the batch span processor (OTEL_BSP_* tune it) and the OTLP/HTTP exporter (it reads the
 * endpoint, headers, timeout and compression variables itself). Returns null when tracing is off, so
 * nothing is created and nothing costs.
 */
export function startTelemetry(options: StartTelemetryOptions): RunTracer | null {
  const settings = telemetrySettings(options.env);
  if (!settings.enabled) return null;
  const resource = defaultResource().merge(
    resourceFromAttributes({
      'service.name': settings.serviceName ?? options.service,
      'process.pid': process.pid,
    }),
  );
  registerContextManager();
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  options.logger.info(
    { service: settings.serviceName ?? options.service, captureContent: settings.captureContent },
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
