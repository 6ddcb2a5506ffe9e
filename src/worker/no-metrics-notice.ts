/**
 * A worker whose METRICS_PORT is taken goes on taking jobs without probes; it says so in its log and,
 * through Redis, in the bot's /readyz (`workersWithoutMetrics`), repeating the notice while it runs so
 * that the bot can tell a live worker from one that died without withdrawing it.
 */
import { hostname } from 'node:os';
import type { Logger } from '../loop/tool-contract.js';
import { NOTICE_REPEAT_MS, type WorkerNotices } from '../store/worker-notices.js';

export interface NoMetricsAnnouncement {
  /** Withdraws the notice (the worker is stopping). */
  stop(): Promise<void>;
}

export function announceNoMetrics(
  notices: WorkerNotices,
  port: number,
  logger: Logger,
  repeatMs = NOTICE_REPEAT_MS,
): NoMetricsAnnouncement {
  const notice = { host: hostname(), pid: process.pid, port };
  // Redis may be down right now: the next repetition says it again.
  const say = () =>
    notices.noMetrics(notice).catch((err: unknown) => logger.debug({ err }, 'no-metrics notice not written'));
  void say();
  const timer = setInterval(say, repeatMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await notices.withdraw(notice).catch(() => {});
    },
  };
}
