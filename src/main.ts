/**
 * `npm start`: the bot and a worker in one process, for small teams. One /metrics (on BOT_METRICS_PORT) covers
 * both. SIGTERM or SIGINT stops the bot from receiving, lets the worker finish its current steps (or hand
 * them back), and exits 0; a shutdown that hangs is cut short at the worker's limit (exit 1).
 */
import { startBot } from './bot/start.js';
import { failStartup } from './bot/startup-failure.js';
import { loadEnv } from './config/env.js';
import { exitOnConfigError } from './config/errors.js';
import { SHUTDOWN_LIMIT_MS, startWorker } from './worker/start.js';

const fail = (err: unknown): never => failStartup('loopgate', err);

// Every variable either half needs, checked in one round before anything starts: the bot alone would
// report OPENAI_API_KEY only after it had started, in a second round.
await exitOnConfigError(() => loadEnv(process.env, { need: 'all' }));
const bot = await exitOnConfigError(startBot).catch(fail);
const worker = await exitOnConfigError(() =>
  startWorker({ metrics: bot.metrics, serveProbes: false, handleSignals: false, telemetry: bot.telemetry }),
).catch(fail);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      bot.logger.error({ limitMs: SHUTDOWN_LIMIT_MS }, 'shutdown took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS).unref();
    Promise.all([bot.stop(), worker.stop(signal)]).then(
      () => process.exit(0),
      (err: unknown) => {
        bot.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
