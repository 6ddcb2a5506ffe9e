/** `npm run eval`: reads .env, runs the eval command line, exits with its status. */
import { fillFromDotenv } from '../config/env.js';
import { evalMain } from './cli.js';

let status: number;
try {
  fillFromDotenv(process.env);
  status = await evalMain(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  });
} catch (error) {
  process.stderr.write(
    `loopgate eval: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  status = 1;
}
process.exit(status);
