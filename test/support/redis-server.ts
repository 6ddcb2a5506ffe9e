import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../demo/lib/free-port.js';

const run = promisify(execFile);

/**
 * A standalone redis-server of a test's own, on a free port of 127.0.0.1, for outages: `kill` stops it
 * dead (SIGKILL) and `start` brings it back on the same port with the same data (every write is fsynced
 * to its append-only file), so the shared Redis on 6379 is never disturbed.
 */
export interface OwnRedis {
  port: number;
  url: string;
  /** Starts the server (again) and resolves once it answers PING. */
  start(): Promise<void>;
  /** SIGKILLs the server and resolves once it is gone. */
  kill(): Promise<void>;
  /** Kills the server and deletes its data. */
  remove(): Promise<void>;
}

async function answers(port: number): Promise<boolean> {
  try {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'], {
      timeout: 2_000,
    });
    return stdout.trim() === 'PONG';
  } catch {
    return false;
  }
}

export async function ownRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'loopgate-redis-'));
  let child: ChildProcess | undefined;

  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await gone;
  };

  const start = async () => {
    if (child) return;
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    const until = Date.now() + 15_000;
    while (!(await answers(port))) {
      if (Date.now() > until) throw new Error(`redis-server on port ${port} did not answer PING`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    kill,
    async remove() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
