/**
 * loopgate's own processes for end-to-end tests: src/bot/main.ts (npm run bot), src/worker/main.ts
 * (npm run worker) or src/main.ts (npm start) under Node with tsx's loader, each spawned as the leader of
 * its own process group so that SIGKILL to the group reaches everything it started, and nothing outlives
 * the test (`killAllLoopgate`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
/**
 * Node with tsx's loader, not the tsx CLI: the CLI relays a signal to its child and SIGKILLs it when the
 * child has not acknowledged within about 60 ms, which a loaded machine misses (exit 143 after SIGTERM).
 */
const NODE_WITH_TSX = [
  process.execPath,
  '--import',
  pathToFileURL(`${repoRoot}node_modules/tsx/dist/loader.mjs`).href,
] as const;

/** Entry points, as the npm scripts start them. */
export const ENTRIES = {
  bot: `${repoRoot}src/bot/main.ts`,
  worker: `${repoRoot}src/worker/main.ts`,
  single: `${repoRoot}src/main.ts`,
} as const;
export type Entry = keyof typeof ENTRIES;

/** The fields of a pino line the tests look at; the rest is kept as is. */
const logLine = z.looseObject({ level: z.union([z.string(), z.number()]), msg: z.string() });
export type LogLine = z.infer<typeof logLine>;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when the process exited. */
  at: number;
}

export interface LoopgateProcess {
  entry: Entry;
  pid: number;
  /** stdout parsed as pino JSON lines (lines that are not JSON are skipped). */
  logs(): LogLine[];
  stderr(): string;
  /** Resolves with the first log line (past or future) matching `predicate`; rejects on exit or timeout. */
  waitForLog(predicate: (line: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  /** True once the process has exited. */
  exited(): boolean;
  /** Resolves when the process has exited. */
  exit: Promise<Exit>;
  /** Sends `signal` as `kill <pid>` would. */
  signal(signal: NodeJS.Signals): void;
  /** Everything the process printed, for failure messages. */
  output(): string;
  /** Sends `signal` to the process group: SIGKILL makes tsx and the Node process die at once, uncleaned. */
  kill(signal: NodeJS.Signals): void;
}

const running = new Set<ChildProcess>();

// Last resort when the test process ends without its afterAll (a crash, an interrupted run): no orphans.
process.once('exit', () => {
  for (const child of running) killGroup(child, 'SIGKILL');
});

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Starts `entry` with exactly `env` (plus PATH) in `cwd`, so no `.env` file of the repository is read. */
export function spawnLoopgate(entry: Entry, env: Record<string, string>, cwd: string): LoopgateProcess {
  const child = spawn(NODE_WITH_TSX[0], [...NODE_WITH_TSX.slice(1), ENTRIES[entry]], {
    cwd,
    // Agent surfaces only where a test asks for them (the fake answers them; most tests read placeholders).
    env: { PATH: process.env.PATH ?? '', SLACK_AGENT_SURFACES: 'off', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`the ${entry} process did not start`);
  running.add(child);
  let partial = '';
  let raw = '';
  let err = '';
  let gone = false;
  const lines: LogLine[] = [];
  const waiters = new Set<{ predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }>();
  const onExit = new Set<() => void>();
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    raw += chunk;
    partial += chunk;
    const complete = partial.split('\n');
    partial = complete.pop() ?? '';
    for (const text of complete) {
      const parsed = logLine.safeParse(safeJson(text));
      if (!parsed.success) continue;
      lines.push(parsed.data);
      for (const waiter of [...waiters]) {
        if (!waiter.predicate(parsed.data)) continue;
        waiters.delete(waiter);
        waiter.resolve(parsed.data);
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exit = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      gone = true;
      running.delete(child);
      for (const notify of [...onExit]) notify();
      resolve({ code, signal, at: performance.now() });
    });
  });
  const output = () => `--- ${entry} ${child.pid} stdout ---\n${raw.slice(-4_000)}\n--- stderr ---\n${err}`;

  return {
    entry,
    pid: child.pid,
    logs: () => [...lines],
    stderr: () => err,
    exited: () => gone,
    output,
    exit,
    signal: (signal) => {
      child.kill(signal);
    },
    kill: (signal) => killGroup(child, signal),
    waitForLog(predicate, what, timeoutMs = 30_000) {
      const past = lines.find(predicate);
      if (past) return Promise.resolve(past);
      return new Promise((resolve, reject) => {
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(waiter);
          onExit.delete(exitNotice);
        };
        const waiter = {
          predicate,
          resolve: (line: LogLine) => {
            finish();
            resolve(line);
          },
        };
        const exitNotice = () => {
          finish();
          reject(new Error(`${entry} ${child.pid} exited before logging "${what}"\n${output()}`));
        };
        const timer = setTimeout(() => {
          finish();
          reject(
            new Error(`${entry} ${child.pid}: no log line "${what}" within ${timeoutMs} ms\n${output()}`),
          );
        }, timeoutMs);
        waiters.add(waiter);
        onExit.add(exitNotice);
        if (gone) exitNotice();
      });
    },
  };
}

/** SIGKILLs every process group started here that is still running, and waits for them to go. */
export async function killAllLoopgate(): Promise<void> {
  const left = [...running];
  const gone = left.map((child) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once('close', () => resolve())),
  );
  for (const child of left) killGroup(child, 'SIGKILL');
  await Promise.all(gone);
}
