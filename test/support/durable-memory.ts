/**
 * In-memory stand-ins for what a worker keeps durable, for engine property tests that crash and resume
 * runs: a run store that keeps a run the way the Redis store does (header hash through the store's own
 * codecs, append-only message, evidence and compaction lists) and refuses any save that rewrites what it
 * holds; an execution ledger with the worker's rules (src/store/engine-ports.ts); and a crash switch that
 * kills the "worker" before or after a chosen durable write.
 */

import type { GatedCall } from '../../src/loop/gated-calls.js';
import { canonicalJson } from '../../src/loop/hash.js';
import type { ExecutionLedger } from '../../src/loop/ports.js';
import type { RunState } from '../../src/loop/run-state.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { decodeEvidence, encodeEvidence } from '../../src/store/runs/evidence-codec.js';
import { changingJson, fixedJson, headerFromHash } from '../../src/store/runs/header-codec.js';
import { compactionSchema, messageSchema } from '../../src/store/runs/run-state-schema.js';

/** The simulated death of a worker: nothing after it runs, and the next job starts from the store. */
export class Crash extends Error {
  constructor(readonly where: string) {
    super(`simulated crash ${where}`);
  }
}

/** A crash planned at the `op`-th durable write of a scenario (0-based), before or after it lands. */
export interface PlannedCrash {
  op: number;
  after: boolean;
}

/** Counts durable writes and throws Crash where the plan says; records where it did. */
export function crashSwitch(plan: readonly PlannedCrash[]) {
  let ops = 0;
  const crashes: Array<{ what: string; after: boolean; toolCallId?: string }> = [];
  return {
    crashes,
    /** Runs the write `fn`, dying before or after it as planned. */
    async write<T>(what: string, fn: () => T | Promise<T>, toolCallId?: string): Promise<T> {
      const planned = plan.find((p) => p.op === ops);
      ops++;
      const crash = () => {
        crashes.push({ what, after: planned!.after, ...(toolCallId ? { toolCallId } : {}) });
        return new Crash(`${planned!.after ? 'after' : 'before'} ${what}`);
      };
      if (planned && !planned.after) throw crash();
      const out = await fn();
      if (planned?.after) throw crash();
      return out;
    },
  };
}

const same = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

/**
 * What a save would change in what the store already holds, or null when it only appends: stored
 * messages, evidence and compactions unchanged and in place, the parts fixed at creation unchanged, the
 * step count never going back.
 */
export function appendOnlyProblem(stored: RunState, next: RunState): string | null {
  const lists = [
    ['messages', stored.messages, next.messages],
    ['evidence', stored.evidence, next.evidence],
    ['compactions', stored.compactions ?? [], next.compactions ?? []],
  ] as const;
  for (const [name, before, after] of lists) {
    if (after.length < before.length) return `${name} shrank from ${before.length} to ${after.length}`;
    const changed = before.findIndex((item, i) => !same(item, after[i]));
    if (changed >= 0) return `${name}[${changed}] was rewritten`;
  }
  for (const key of ['runId', 'requester', 'question', 'limits', 'createdAt', 'agent'] as const) {
    if (!same(stored[key], next[key])) return `${key}, fixed at creation, changed`;
  }
  if (next.step < stored.step) return `step went back from ${stored.step} to ${next.step}`;
  return null;
}

/**
 * One run kept as the Redis store keeps it: the header hash written with the store's codecs, and
 * append-only lists of JSON elements (evidence encoded relative to the messages saved with it, as
 * saveStep does). `load` decodes it with the store's schemas, as loadRun does. A save that is not
 * append-only throws (a plain Error, never a Crash), so a property sees it.
 */
export class MemoryRunStore {
  private header: Record<string, string> = {};
  private readonly messages: string[] = [];
  private readonly evidence: string[] = [];
  private readonly compactions: string[] = [];
  /** Saves that landed. */
  saves = 0;

  constructor(initial: RunState) {
    this.header.state = fixedJson(initial);
    this.append(initial);
  }

  save(state: RunState): void {
    const problem = appendOnlyProblem(this.load(), state);
    if (problem) throw new Error(`run ${state.runId}: the save is not append-only: ${problem}`);
    this.append(state);
    this.saves++;
  }

  load(): RunState {
    const header = headerFromHash('run1', this.header);
    const messages = this.messages.map((m) => messageSchema.parse(JSON.parse(m)));
    const evidence = decodeEvidence(
      this.evidence.map((e) => JSON.parse(e) as unknown),
      messages,
      header.createdAt,
    );
    const compactions = this.compactions.map((c) => compactionSchema.parse(JSON.parse(c)));
    return { ...header, messages, evidence, ...(compactions.length > 0 ? { compactions } : {}) };
  }

  private append(state: RunState): void {
    const from = this.messages.length;
    for (const m of state.messages.slice(from)) this.messages.push(JSON.stringify(m));
    for (const e of state.evidence.slice(this.evidence.length)) {
      this.evidence.push(encodeEvidence(e, state.messages, from, state.createdAt));
    }
    for (const c of (state.compactions ?? []).slice(this.compactions.length)) {
      this.compactions.push(JSON.stringify(c));
    }
    this.header = {
      ...this.header,
      progress: changingJson(state),
      status: state.status,
      step: String(state.step),
      stopReason: state.stopReason ?? '',
      createdAt: String(state.createdAt),
      updatedAt: String(state.updatedAt),
    };
  }
}

type Entry = { status: 'executing' | 'succeeded' | 'failed' | 'outcome_unknown'; result?: ToolResult };

const refusedResult = (code: string, message: string): ToolResult => ({
  ok: false,
  error: { code, message },
});

/**
 * The execution ledger of approved calls as the worker's port keeps it (approved -> executing ->
 * succeeded | failed): begins only a call approved for exactly its arguments' hash; an entry found
 * executing (a crash between start and record) becomes outcome_unknown and is not run again, unless the
 * tool is idempotent; a finished entry gives back its recorded result.
 */
export class MemoryLedger {
  /** Approved argument hash per tool call id, as the approval records hold it. */
  readonly approvals = new Map<string, string>();
  readonly entries = new Map<string, Entry>();

  port(crash: ReturnType<typeof crashSwitch>): ExecutionLedger {
    return {
      begin: (call) =>
        crash.write(`ledger.begin ${call.toolCallId}`, () => this.begin(call), call.toolCallId),
      finish: (call, result) =>
        crash.write(`ledger.finish ${call.toolCallId}`, () => this.finish(call, result), call.toolCallId),
    };
  }

  private begin(call: GatedCall): Awaited<ReturnType<ExecutionLedger['begin']>> {
    const approved = this.approvals.get(call.toolCallId);
    if (approved === undefined)
      return { proceed: false, result: refusedResult('approval_mismatch', 'no approval is recorded') };
    if (approved !== call.argsHash)
      return { proceed: false, result: refusedResult('approval_mismatch', 'other arguments were approved') };
    const entry = this.entries.get(call.toolCallId);
    const unfinished = entry?.status === 'executing' || entry?.status === 'outcome_unknown';
    if (!entry || (unfinished && call.idempotent)) {
      this.entries.set(call.toolCallId, { status: 'executing' });
      return { proceed: true };
    }
    if (entry.result) return { proceed: false, result: entry.result };
    this.entries.set(call.toolCallId, { status: 'outcome_unknown' });
    return {
      proceed: false,
      result: refusedResult('outcome_unknown', `${call.tool} was started before a crash; not run again`),
    };
  }

  private finish(call: GatedCall, result: ToolResult): void {
    if (this.entries.get(call.toolCallId)?.status !== 'executing') return;
    this.entries.set(call.toolCallId, { status: result.ok ? 'succeeded' : 'failed', result });
  }
}
