import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { ConfigError } from '../config/errors.js';

interface ProbeServerOptions {
  registry: Registry;
  /** Ready when every check resolves true; the failing ones are named in the 503 body. */
  readiness: Record<string, () => Promise<boolean>>;
  /**
   * What a failing check means and what to do, by check name, listed under `why` in a 503 body so that
   * whoever reads /readyz learns why, not only which check; a check without one is named as failed.
   */
  reasons?: Record<string, string>;
  /**
   * Shown in the /readyz body besides the checks, without deciding readiness; details that cannot be
   * read (Redis down) are left out rather than failing the probe.
   */
  details?: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  port: number;
  /** The variable `port` came from, named when the port is already in use (e.g. `METRICS_PORT`). */
  portVariable: string;
  host?: string;
}

/**
 * A listen error as the operator can act on it: a port in use becomes a ConfigError naming the variable
 * that chose the port (a second process on one host), anything else is returned as it is.
 */
export function listenError(err: unknown, variable: string, port: number): unknown {
  if ((err as NodeJS.ErrnoException | undefined)?.code !== 'EADDRINUSE') return err;
  return new ConfigError('environment', [
    { key: variable, problem: `port ${port} is already in use (set ${variable} to a free port)` },
  ]);
}

/** Runs the readiness checks with a time limit each; a check that throws or hangs counts as failed. */
export async function runChecks(checks: Record<string, () => Promise<boolean>>, timeoutMs = 2_000) {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      const ok = await Promise.race([check().catch(() => false), limit]);
      clearTimeout(timer);
      return [name, ok] as const;
    }),
  );
  return { ok: entries.every(([, ok]) => ok), checks: Object.fromEntries(entries) };
}

async function readDetails(details: ProbeServerOptions['details'], timeoutMs = 2_000) {
  if (!details) return {};
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<Record<string, unknown>>((resolve) => {
    timer = setTimeout(() => resolve({}), timeoutMs);
  });
  const read = Promise.resolve()
    .then(details)
    .catch(() => ({}));
  const result = await Promise.race([read, limit]);
  clearTimeout(timer);
  return result;
}

function whyNotReady(checks: Record<string, boolean>, reasons: Record<string, string>): string[] {
  return Object.entries(checks)
    .filter(([, ok]) => !ok)
    .map(([name]) => reasons[name] ?? `${name}: check failed`);
}

/** A worker's HTTP side: GET /metrics (Prometheus), /healthz (alive), /readyz (dependencies reachable). */
export function startProbeServer(options: ProbeServerOptions): Promise<Server> {
  const server = createServer((req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    if (req.method !== 'GET') return send(405, 'text/plain', 'method not allowed\n');
    if (req.url === '/metrics') {
      options.registry
        .metrics()
        .then((text) => send(200, options.registry.contentType, text))
        .catch((err: Error) => send(500, 'text/plain', `${err.message}\n`));
      return;
    }
    if (req.url === '/healthz') return send(200, 'application/json', '{"ok":true}');
    if (req.url === '/readyz') {
      Promise.all([runChecks(options.readiness), readDetails(options.details)]).then(([result, details]) =>
        send(
          result.ok ? 200 : 503,
          'application/json',
          JSON.stringify({
            ...result,
            ...(result.ok ? {} : { why: whyNotReady(result.checks, options.reasons ?? {}) }),
            ...details,
          }),
        ),
      );
      return;
    }
    send(404, 'text/plain', 'not found\n');
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(listenError(err, options.portVariable, options.port)));
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve(server));
  });
}
