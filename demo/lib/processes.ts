/**
 * The real loopgate processes, started as `npm run bot` and `npm run worker` start them
 * (`tsx src/bot/main.ts`, `tsx src/worker/main.ts`), each the leader of its own process group so that
 * nothing outlives the demo: `stop` asks politely (SIGTERM, the production shutdown path), then
 * SIGKILLs the group; if the demo itself exits first, the groups are SIGKILLed on its way out.
 * stdout and stderr go to a log file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = `${REPO_ROOT}node_modules/.bin/tsx`;

export const ENTRY_POINTS = {
  bot: `${REPO_ROOT}src/bot/main.ts`,
  worker: `${REPO_ROOT}src/worker/main.ts`,
} as const;

export type ProcessName = keyof typeof ENTRY_POINTS;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LoopgateProcess {
  name: ProcessName;
  pid: number;
  logPath: string;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  /** The exit, once it happened. */
  exit(): Exit | undefined;
  /** The last `lines` lines of its log. */
  logTail(lines?: number): string;
  /** SIGTERM, then after `graceMs` SIGKILL to the whole group; resolves once it is gone. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Signals the process group, which outlives its leader while the Node process tsx ran is alive. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

// Last resort when the demo ends without stopping its processes (an uncaught error, process.exit).
process.once('exit', () => {
  for (const child of running) killGroup(child, 'SIGKILL');
});

/** Starts `name` with exactly `env` in `cwd`, appending its output to `logPath`. */
export function startProcess(
  name: ProcessName,
  env: Record<string, string>,
  cwd: string,
  logPath: string,
): LoopgateProcess {
  const log = openSync(logPath, 'a');
  const child = spawn(TSX, [ENTRY_POINTS[name]], { cwd, env, detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  if (child.pid === undefined) throw new Error(`the ${name} process did not start`);
  running.add(child);
  let exit: Exit | undefined;
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      running.delete(child);
      exit = { code, signal };
      resolve(exit);
    });
  });
  return {
    name,
    pid: child.pid,
    logPath,
    exited,
    exit: () => exit,
    logTail: (lines = 20) => {
      try {
        return readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    },
    async stop(graceMs = 8_000) {
      if (exit) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // tsx is gone; make sure the Node process it ran is too.
      killGroup(child, 'SIGKILL');
    },
  };
}
