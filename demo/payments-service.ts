/**
 * The fictional `payments` service the demo's on-call story is about, on 127.0.0.1 (a free port):
 * `GET /health/payments` reports it degraded (HTTP 503, its database pool exhausted) until
 * `POST /restart/payments?env=…` is called, which is recorded and makes it healthy (HTTP 200).
 */
import { type HttpFixture, reply, startHttpFixture } from '../test/fakes/http-fixtures.js';

export interface PaymentsService {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Every restart request received, with its query (the environment). */
  restarts(): { path: string; idempotencyKey: string | undefined }[];
  healthy(): boolean;
  close(): Promise<void>;
}

const DEGRADED = {
  service: 'payments',
  status: 'degraded',
  p99_latency_ms: 2400,
  checks: {
    database: 'ok',
    db_pool: 'exhausted: 50 of 50 connections in use, 37 requests waiting',
    card_processor: 'ok',
  },
};

const HEALTHY = {
  service: 'payments',
  status: 'ok',
  p99_latency_ms: 180,
  checks: { database: 'ok', db_pool: '4 of 50 connections in use', card_processor: 'ok' },
};

export async function startPaymentsService(): Promise<PaymentsService> {
  let healthy = false;
  let started = new Date(Date.now() - 12 * 60_000).toISOString();
  const fixture: HttpFixture = await startHttpFixture((req, res) => {
    const path = req.path.split('?')[0];
    if (req.method === 'GET' && path === '/health/payments') {
      const body = healthy ? { ...HEALTHY, up_since: started } : { ...DEGRADED, degraded_since: started };
      reply(res, healthy ? 200 : 503, 'application/json', JSON.stringify(body));
    } else if (req.method === 'POST' && path === '/restart/payments') {
      healthy = true;
      started = new Date().toISOString();
      reply(res, 200, 'application/json', JSON.stringify({ restarted: 'payments', at: started }));
    } else {
      reply(res, 404, 'text/plain', `no route for ${req.method} ${req.path}`);
    }
  });
  return {
    url: fixture.url,
    restarts: () =>
      fixture.requests
        .filter((r) => r.method === 'POST' && r.path.startsWith('/restart/'))
        .map((r) => ({ path: r.path, idempotencyKey: str(r.headers['idempotency-key']) })),
    healthy: () => healthy,
    close: () => fixture.close(),
  };
}

function str(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
