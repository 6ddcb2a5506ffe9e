/**
 * `npm run bot`: the Bolt app as a process. A configuration error (or a port in use) names each bad key
 * and exits 1; any other start-up failure (a token Slack refuses) is logged and exits 1. SIGTERM or SIGINT
 * stops receiving, lets running tasks finish, closes the queue and Redis, and exits 0; a shutdown that
 * hangs is cut short (exit 1).
 */
import { exitOnConfigError } from '../config/errors.js';
import { BOT_SHUTDOWN_LIMIT_MS, startBot } from './start.js';
import { failStartup } from './startup-failure.js';

const started = await exitOnConfigError(startBot).catch((err: unknown) => failStartup('loopgate-bot', err));

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  // `on`, not `once`: a second signal while stopping must not fall back to the default (kill).
  process.on(signal, () => {
    setTimeout(() => {
      started.logger.error({ limitMs: BOT_SHUTDOWN_LIMIT_MS }, 'shutdown took too long; exiting');
      process.exit(1);
    }, BOT_SHUTDOWN_LIMIT_MS).unref();
    started.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        started.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
