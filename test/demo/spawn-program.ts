/**
 * `tsx demo/<program>.ts` as `npm run demo` / `npm run chat` start it, for the tests: stdout and stderr
 * collected, stdin writable, waits on output, and a kill of its whole process group so nothing outlives
 * a failed test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = `${REPO_ROOT}node_modules/.bin/tsx`;

export interface Program {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Writes one line to stdin. */
  type(line: string): void;
  /** Resolves once stdout contains `text` (after `from`, an index into stdout); rejects at the deadline. */
  waitFor(text: string, timeoutMs?: number, from?: number): Promise<void>;
  exited: Promise<number | null>;
  /** SIGTERM (the program cleans up), then SIGKILL to its group after `graceMs`; resolves once gone. */
  stop(graceMs?: number): Promise<void>;
}

export function spawnProgram(program: 'demo' | 'chat', env: Record<string, string>, cwd: string): Program {
  const child = spawn(TSX, [`${REPO_ROOT}demo/${program}.ts`], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    type: (line) => {
      child.stdin?.write(`${line}\n`);
    },
    async waitFor(text, timeoutMs = 20_000, from = 0) {
      const until = Date.now() + timeoutMs;
      while (!out.slice(from).includes(text)) {
        if (child.exitCode !== null)
          throw new Error(`${program} exited before printing "${text}":\n${out}\n${err}`);
        if (Date.now() > until)
          throw new Error(`${program} did not print "${text}" in time:\n${out}\n${err}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    exited,
    async stop(graceMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
