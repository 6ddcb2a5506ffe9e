/** The CLI process (bin/loopgate.js imports this): reads .env, runs the command, exits with its status. */

import { fillFromDotenv } from '../config/env.js';
import { runCli } from './cli.js';
import { EXIT } from './errors.js';

// `loopgate audit ... | head` closes the pipe early: that is the reader's choice, not a failure.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(EXIT.ok);
  throw error;
});

let status: number;
try {
  fillFromDotenv(process.env);
  status = await runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    now: () => Date.now(),
  });
} catch (error) {
  // Only .env reading fails outside runCli, with a ConfigError naming the file.
  process.stderr.write(`loopgate: ${error instanceof Error ? error.message : String(error)}\n`);
  status = EXIT.error;
}
process.exitCode = status;
