/**
 * Probes for orchestrators and Prometheus: `GET /healthz` says the process serves HTTP (liveness);
 * `GET /readyz` says it can do its job: each of its Redis connections answers a PING and, when given,
 * the other checks pass (at least one worker takes jobs), each within a second; 503 names what failed.
 * `GET /metrics` serves the process's Prometheus registry, when it has one.
 */
import type { ServerResponse } from 'node:http';
import type { CustomRoute } from '@slack/bolt';
import type { Registry } from 'prom-client';
import { runChecks } from '../metrics/http.js';

export interface Pingable {
  ping(): Promise<string>;
}

const READY_TIMEOUT_MS = 1_000;

function json(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

export interface HealthOptions {
  registry?: Registry;
  /** More readiness checks, by name. */
  [check: string]: Registry | (() => Promise<boolean>) | undefined;
}

export function healthRoutes(redis: readonly Pingable[], options: HealthOptions = {}): CustomRoute[] {
  const { registry, ...extra } = options;
  const checks: Record<string, () => Promise<boolean>> = {
    redis: async () =>
      (await Promise.all(redis.map(async (c) => (await c.ping()) === 'PONG'))).every(Boolean),
  };
  for (const [name, check] of Object.entries(extra)) {
    if (typeof check === 'function') checks[name] = check;
  }
  const routes: CustomRoute[] = [
    { path: '/healthz', method: ['GET'], handler: (_req, res) => json(res, 200, { ok: true }) },
    {
      path: '/readyz',
      method: ['GET'],
      handler: (_req, res) => {
        void runChecks(checks, READY_TIMEOUT_MS).then((result) => json(res, result.ok ? 200 : 503, result));
      },
    },
  ];
  if (registry) {
    routes.push({
      path: '/metrics',
      method: ['GET'],
      handler: (_req, res) => {
        registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': registry.contentType });
            res.end(text);
          },
          (err: Error) => json(res, 500, { ok: false, error: err.message }),
        );
      },
    });
  }
  return routes;
}
