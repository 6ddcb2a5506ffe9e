/**
 * Progress of an eval: on a terminal, one line redrawn in place (a bar, counts, the last trial); anywhere
 * else (CI, a pipe, a file) one plain line per finished trial.
 */
import type { TrialRecord } from './results.js';
import type { ProgressSink } from './runner.js';

export interface ProgressOutput {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

function outcomeWord(r: TrialRecord): string {
  if (r.error !== undefined) return 'ERROR';
  return r.passed ? 'pass' : 'FAIL';
}

function describe(r: TrialRecord): string {
  const m = r.metrics;
  const detail = r.error ?? `${m.stopReason}, ${m.steps} steps, ${(m.wallMs / 1000).toFixed(1)}s`;
  const failed = r.graders.filter((g) => !g.passed).map((g) => g.grader);
  return `${outcomeWord(r)} ${r.model} ${r.task} #${r.trial} (${detail})${failed.length > 0 ? ` failed: ${failed.join(', ')}` : ''}`;
}

function bar(done: number, total: number, width: number): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
}

export function createProgress(out: ProgressOutput): ProgressSink {
  let total = 0;
  let done = 0;
  let passed = 0;
  let failed = 0;
  let last = '';
  const tty = out.isTTY === true;
  const redraw = () => {
    const head = `${bar(done, total, 24)} ${done}/${total} trials, ${passed} passed, ${failed} failed`;
    const room = Math.max(10, (out.columns ?? 100) - head.length - 3);
    out.write(`\r\x1b[2K${head}${last ? ` · ${last.slice(0, room)}` : ''}`);
  };
  return {
    start(t, alreadyDone) {
      total = t;
      done = alreadyDone;
      const note = alreadyDone > 0 ? ` (${alreadyDone} already in the results file)` : '';
      if (tty) redraw();
      else out.write(`${total} trials${note}\n`);
    },
    trialDone(record) {
      done += 1;
      if (record.passed) passed += 1;
      else failed += 1;
      last = describe(record);
      if (tty) redraw();
      else out.write(`[${done}/${total}] ${last}\n`);
    },
    finish() {
      if (tty) out.write('\n');
    },
  };
}
