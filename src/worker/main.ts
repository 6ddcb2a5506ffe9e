/** `npm run worker`: one worker process advancing runs from the queue. Any number may run. */
import { exitOnConfigError } from '../config/errors.js';
import { startWorker } from './start.js';

await exitOnConfigError(startWorker);
