/**
 * Worker processes for end-to-end tests: `node_modules/.bin/tsx src/worker/main.ts` spawned as the leader
 * of its own process group, so a crash can be simulated for real (SIGKILL to the group reaches both tsx
 * and the Node process it runs the worker in) and nothing outlives the test (`killAllWorkers`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const TSX = `${repoRoot}node_modules/.bin/tsx`;
const WORKER_MAIN = `${repoRoot}src/worker/main.ts`;

/** The fields of a pino line the tests look at; the rest is kept as is. */
const logLine = z.looseObject({ level: z.union([z.string(), z.number()]), msg: z.string() });
export type LogLine = z.infer<typeof logLine>;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when the process exited. */
  at: number;
}

export interface WorkerProcess {
  pid: number;
  /** stdout parsed as pino JSON lines (lines that are not JSON are skipped). */
  logs(): LogLine[];
  stderr(): string;
  /** Resolves with the first log line (past or future) matching `predicate`. */
  waitForLog(predicate: (line: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  /** Sends `signal` to the worker as `kill <pid>` would (tsx relays it to the Node process it runs). */
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL to the whole process group: tsx and the worker die at once, nothing is cleaned up. */
  crash(): void;
}

const running = new Set<ChildProcess>();

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/**
 * Starts a worker process with exactly `env` (plus PATH) in `cwd`, so no `.env` file of the repository is
 * read. stdout and stderr are collected.
 */
export function spawnWorker(env: Record<string, string>, cwd: string): WorkerProcess {
  const child = spawn(TSX, [WORKER_MAIN], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error('the worker process did not start');
  running.add(child);
  let out = '';
  let err = '';
  const lines: LogLine[] = [];
  const waiters: { predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    const complete = out.split('\n');
    out = complete.pop() ?? '';
    for (const text of complete) {
      const parsed = logLine.safeParse(safeJson(text));
      if (!parsed.success) continue;
      lines.push(parsed.data);
      for (const waiter of [...waiters]) {
        if (!waiter.predicate(parsed.data)) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(parsed.data);
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal, at: performance.now() });
    });
  });

  return {
    pid: child.pid,
    logs: () => [...lines],
    stderr: () => err,
    waitForLog(predicate, what, timeoutMs = 15_000) {
      const past = lines.find(predicate);
      if (past) return Promise.resolve(past);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(
            new Error(`worker ${child.pid}: no log line "${what}" within ${timeoutMs} ms; stderr: ${err}`),
          );
        }, timeoutMs);
        const waiter = {
          predicate,
          resolve: (line: LogLine) => {
            clearTimeout(timer);
            resolve(line);
          },
        };
        waiters.push(waiter);
        void exited.then(() => {
          if (!waiters.includes(waiter)) return;
          waiters.splice(waiters.indexOf(waiter), 1);
          clearTimeout(timer);
          reject(new Error(`worker ${child.pid} exited before logging "${what}"; stderr: ${err}`));
        });
      });
    },
    exited,
    signal: (signal) => {
      child.kill(signal);
    },
    crash: () => killGroup(child, 'SIGKILL'),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** SIGKILLs every worker process group still running and waits for them to go. For afterEach. */
export async function killAllWorkers(): Promise<void> {
  const left = [...running];
  const gone = left.map((child) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once('close', () => resolve())),
  );
  for (const child of left) killGroup(child, 'SIGKILL');
  await Promise.all(gone);
}
