/**
 * The bot's probes. On the public PORT (where Slack's requests arrive) only `GET /healthz`: it says the
 * process serves HTTP and touches nothing else, so anyone reaching it costs nothing. `/readyz` (Redis and
 * at least one worker) and `/metrics` are served on the internal BOT_METRICS_PORT (startProbeServer).
 */
import type { CustomRoute } from '@slack/bolt';
import type { RunsQueue } from '../queue/index.js';

interface Pingable {
  ping(): Promise<string>;
}

/** The public liveness route: a constant answer, no Redis call. */
export const livenessRoute: CustomRoute = {
  path: '/healthz',
  method: ['GET'],
  handler: (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end('{"ok":true}');
  },
};

/**
 * The bot's readiness checks: each of its Redis connections answers a PING, and someone will act on what
 * the bot queues (at least one worker is connected).
 */
export function botReadiness(
  redis: readonly Pingable[],
  queue: Pick<RunsQueue, 'getWorkersCount'>,
): Record<string, () => Promise<boolean>> {
  return {
    redis: async () =>
      (await Promise.all(redis.map(async (c) => (await c.ping()) === 'PONG'))).every(Boolean),
    workers: async () => (await queue.getWorkersCount()) > 0,
  };
}

/** What each of botReadiness's checks failing means, for /readyz's `why`. */
export function botReadinessReasons(redisVariable: string): Record<string, string> {
  return {
    redis: `redis: Redis does not answer (check ${redisVariable} and that Redis is up); events cannot be queued`,
    workers: 'workers: no worker is connected to the queue; questions wait until one starts (npm run worker)',
  };
}
