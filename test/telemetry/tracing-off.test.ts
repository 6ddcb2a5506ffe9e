/**
 * Tracing off (no OTLP endpoint) changes nothing: startTelemetry resolves to null without loading any
 * OpenTelemetry module, registers no context manager (whose async hooks would tax every promise on
 * Node 20), and no other source file loads one at run time. Each module is watched by a mock factory that
 * notes its loading and hands back the real module.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/loop/tool-contract.js';
import type { LoadedRun } from '../../src/store/runs/run-store.js';
import { startTelemetry } from '../../src/telemetry/sdk.js';
import { openSegment } from '../../src/worker/run-telemetry.js';
import type { WorkerRuntime } from '../../src/worker/runtime.js';
import { startOtlpReceiver } from '../fakes/otlp-receiver.js';

const { loaded, watch } = vi.hoisted(() => {
  const loaded = new Set<string>();
  /** A mock factory that notes the module's loading and hands back the real module. */
  const watch =
    (name: string) =>
    async <T>(real: () => Promise<T>): Promise<T> => {
      loaded.add(name);
      return real();
    };
  return { loaded, watch };
});
vi.mock('@opentelemetry/api', watch('@opentelemetry/api'));
vi.mock('@opentelemetry/context-async-hooks', watch('context-async-hooks'));
vi.mock('@opentelemetry/core', watch('core'));
vi.mock('@opentelemetry/resources', watch('resources'));
vi.mock('@opentelemetry/sdk-trace-base', watch('sdk-trace-base'));
vi.mock('@opentelemetry/exporter-trace-otlp-proto', watch('exporter-proto'));
vi.mock('../../src/telemetry/run-tracer.js', watch('run-tracer'));

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };

/** Every .ts file under a directory. */
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

describe('tracing off', () => {
  it('loads no OpenTelemetry module and registers no context manager', async () => {
    for (const env of [{}, { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }]) {
      expect(await startTelemetry({ service: 'loopgate-test', env, logger, redact: (t) => t })).toBeNull();
    }
    expect([...loaded]).toEqual([]);
    // No context manager: a value set on the context is not seen inside `with` (the no-op manager's way).
    const { context, createContextKey, ROOT_CONTEXT } = await import('@opentelemetry/api');
    const key = createContextKey('probe');
    expect(context.with(ROOT_CONTEXT.setValue(key, 1), () => context.active().getValue(key))).toBeUndefined();
  });

  it('no source file but src/telemetry/sdk.ts loads OpenTelemetry at run time (the others import types)', () => {
    const src = new URL('../../src/', import.meta.url).pathname;
    const offenders = sources(src).filter((file) => {
      if (file.endsWith('src/telemetry/sdk.ts') || file.endsWith('src/telemetry/run-tracer.ts')) return false;
      const text = readFileSync(file, 'utf8');
      return /^import (?!type )[^;]*from '(@opentelemetry\/[^']+|[^']*run-tracer\.js)'/m.test(text);
    });
    expect(offenders).toEqual([]);
  });

  it('a worker without a tracer opens no span for a job and asks its store nothing for it', async () => {
    const untouchable = new Proxy(
      {},
      {
        get() {
          throw new Error('touched');
        },
      },
    );
    const rt = { store: untouchable } as unknown as WorkerRuntime;
    expect(await openSegment(rt, untouchable as LoadedRun, 'job-1', { name: 'start' }, logger)).toBeNull();
  });

  it('with an endpoint, the same watch sees the SDK loaded (so the first test can see it)', async () => {
    const otlp = await startOtlpReceiver();
    try {
      const tracer = await startTelemetry({
        service: 'loopgate-test',
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url },
        logger,
        redact: (t) => t,
      });
      expect(tracer).not.toBeNull();
      await tracer?.shutdown();
      expect(loaded).toEqual(
        new Set([
          '@opentelemetry/api',
          'context-async-hooks',
          'core',
          'resources',
          'sdk-trace-base',
          'exporter-proto',
          'run-tracer',
        ]),
      );
    } finally {
      await otlp.close();
    }
  });
});
