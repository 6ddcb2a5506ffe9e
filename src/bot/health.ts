/**
 * Probes for orchestrators: `GET /healthz` says the process serves HTTP (liveness); `GET /readyz` says it
 * can do its job, i.e. each of its Redis connections answers a PING within a second (readiness), and is
 * 503 otherwise.
 */
import type { ServerResponse } from 'node:http';
import type { CustomRoute } from '@slack/bolt';
import { within } from './background.js';

export interface Pingable {
  ping(): Promise<string>;
}

const READY_TIMEOUT_MS = 1_000;

function json(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

const answers = async (connection: Pingable) =>
  (await within(connection.ping(), READY_TIMEOUT_MS)) === 'PONG';

export function healthRoutes(redis: readonly Pingable[]): CustomRoute[] {
  return [
    { path: '/healthz', method: ['GET'], handler: (_req, res) => json(res, 200, { ok: true }) },
    {
      path: '/readyz',
      method: ['GET'],
      handler: (_req, res) => {
        // `within` never rejects: a failed or slow PING reads as no answer.
        void Promise.all(redis.map(answers)).then((replies) =>
          replies.every(Boolean)
            ? json(res, 200, { ok: true, redis: 'ok' })
            : json(res, 503, { ok: false, redis: 'no answer' }),
        );
      },
    },
  ];
}
