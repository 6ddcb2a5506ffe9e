/**
 * Issue 11's combined property: under any interleaving of retries, compactions and sub-agent results —
 * with parallel calls, people's decisions (approve, approve with edited arguments, reject, expire,
 * unknown outcome), cancels, and workers that yield or crash at any durable write and leave the run to
 * the next job, which reloads it through the store's codecs — every tool call gets exactly one result
 * before the next model call (in what the model is sent, compacted or not), nothing gated runs without
 * an approval of exactly its (possibly edited) arguments, no non-idempotent call runs twice, and the
 * stored history only grows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { askTool } from '../../src/agents/ask-tool.js';
import { summaryText } from '../../src/loop/context.js';
import { cancelRun } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import { ModelError, ToolFailure } from '../../src/loop/errors.js';
import type { Decision, GatedCall } from '../../src/loop/gated-calls.js';
import { argsHash } from '../../src/loop/hash.js';
import type { Message } from '../../src/loop/messages.js';
import type { ModelPort } from '../../src/loop/model-port.js';
import type { EngineDeps, ExecutionLedger } from '../../src/loop/ports.js';
import { type Boundary, type RunOutcome, runUntilPause, settleAndContinue } from '../../src/loop/run.js';
import type { RunState } from '../../src/loop/run-state.js';
import { isFinished } from '../../src/loop/state.js';
import type { ChildOutcome, DelegatedCall } from '../../src/loop/subagents.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import {
  appendOnlyProblem,
  Crash,
  crashSwitch,
  MemoryLedger,
  MemoryRunStore,
} from '../support/durable-memory.js';
import { manualClock, newRun, type ScriptStep, silentLogger } from '../support/engine.js';
import {
  type GatedExecution,
  gatedExecutionProblems,
  historyProblem,
  type RecordedDecision,
  viewOfHistoryProblem,
  viewProblem,
  waitingProblem,
} from '../support/loop-checks.js';
import { contextLimits, memoryResultStore } from '../support/memory-results.js';
import { isSummaryRequest, windowModel } from '../support/window-model.js';

const RETRY = { attempts: 3, initialDelayMs: 100, maxDelayMs: 400 };
/** Tools whose calls may run again (same idempotency key) after a transient failure or a crash. */
const IDEMPOTENT = new Set(['page']);

type GatedOutcome = 'ok' | 'transient' | 'permanent';

/**
 * Reads that answer, fail transiently a given number of times (then answer, or fail for good past the
 * retry policy), fail permanently, or return long text; non-idempotent write and notify tools that may
 * fail transiently once approved (never retried); an idempotent notify that is retried; two sub-agents.
 * Every execution is logged as the tool saw it.
 */
function scenarioTools(gatedOutcomes: readonly GatedOutcome[]) {
  const reads: Array<{ tool: string; toolCallId: string }> = [];
  const gated: GatedExecution[] = [];
  const attempts = new Map<string, number>();
  const attempt = (toolCallId: string) => {
    const n = (attempts.get(toolCallId) ?? 0) + 1;
    attempts.set(toolCallId, n);
    return n;
  };
  const queue = [...gatedOutcomes];
  const failAsPlanned = () => {
    const next = queue.shift() ?? 'ok';
    if (next === 'transient') throw new ToolFailure('unavailable', 'HTTP 503', { transient: true });
    if (next === 'permanent') throw new ToolFailure('refused', 'HTTP 409: conflict');
  };
  const tools: AnyTool[] = [
    defineTool({
      name: 'lookup',
      description: 'Look up a service status',
      effect: 'read',
      parameters: z.object({ service: z.string() }),
      async execute(args, ctx) {
        reads.push({ tool: 'lookup', toolCallId: ctx.toolCallId });
        return { service: args.service, status: 'ok' };
      },
    }),
    defineTool({
      name: 'flaky',
      description: 'A read whose service is unreliable',
      effect: 'read',
      retry: RETRY,
      parameters: z.object({ n: z.number().int(), fails: z.number().int() }),
      async execute(args, ctx) {
        reads.push({ tool: 'flaky', toolCallId: ctx.toolCallId });
        const seen = attempt(ctx.toolCallId);
        if (args.fails < 0) throw new ToolFailure('forbidden', 'HTTP 403');
        if (seen <= args.fails) {
          throw new ToolFailure('unavailable', 'HTTP 503', {
            transient: true,
            ...(seen % 2 === 0 ? { retryAfterMs: 150 } : {}),
          });
        }
        return { n: args.n, ok: true };
      },
    }),
    defineTool({
      name: 'report',
      description: 'A long report',
      effect: 'read',
      parameters: z.object({ row: z.number().int() }),
      async execute(args, ctx) {
        reads.push({ tool: 'report', toolCallId: ctx.toolCallId });
        return Array.from(
          { length: 20 + (args.row % 50) },
          (_, i) => `row ${args.row}.${i}: latency ${(args.row * 13 + i) % 300} ms`,
        ).join('\n');
      },
    }),
    defineTool({
      name: 'restart',
      description: 'Restart a service',
      effect: 'write',
      parameters: z.object({ service: z.enum(['payments', 'search', 'auth']) }),
      async preview(args) {
        return `POST /restart/${args.service}`;
      },
      async execute(args, ctx) {
        gated.push({ tool: 'restart', toolCallId: ctx.toolCallId, args });
        failAsPlanned();
        return { restarted: args.service };
      },
      async verify(args) {
        return { ok: true, summary: `${args.service} healthy` };
      },
    }),
    defineTool({
      name: 'announce',
      description: 'Post a message',
      effect: 'notify',
      parameters: z.object({ text: z.string().min(1) }),
      async execute(args, ctx) {
        gated.push({ tool: 'announce', toolCallId: ctx.toolCallId, args });
        failAsPlanned();
        return { posted: true };
      },
    }),
    defineTool({
      name: 'page',
      description: 'Page the on-call engineer (deduplicated by the pager)',
      effect: 'notify',
      idempotent: true,
      retry: RETRY,
      parameters: z.object({ text: z.string().min(1), fails: z.number().int().min(0).max(5) }),
      async execute(args, ctx) {
        gated.push({ tool: 'page', toolCallId: ctx.toolCallId, args });
        if (attempt(ctx.toolCallId) <= args.fails) {
          throw new ToolFailure('unavailable', 'HTTP 502', { transient: true });
        }
        return { paged: true };
      },
    }),
    askTool({ name: 'triage', description: 'Investigates incidents.' }),
    askTool({ name: 'writer', description: 'Drafts messages.' }),
  ];
  return { reads, gated, tools: new Map(tools.map((t) => [t.name, t])) };
}

const callSpec = fc.oneof(
  { weight: 3, arbitrary: fc.record({ name: fc.constant('report'), args: fc.record({ row: fc.nat(99) }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      name: fc.constant('flaky'),
      args: fc.record({ n: fc.nat(9), fails: fc.integer({ min: -1, max: 4 }) }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.constantFrom('lookup', 'nope'),
      args: fc.constantFrom<unknown>({ service: 'a' }, { service: 42 }, '{"service": '),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      name: fc.constant('restart'),
      args: fc.constantFrom({ service: 'payments' }, { service: 'search' }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.constant('announce'),
      args: fc.record({ text: fc.constantFrom('hi', 'done') }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.constant('page'),
      args: fc.record({ text: fc.constantFrom('db down', 'disk full'), fails: fc.nat(4) }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      name: fc.constantFrom('ask_triage', 'ask_writer'),
      args: fc.constantFrom<unknown>(
        { task: 'look into the latency' },
        { task: 'draft a note', context: 'payments is slow' },
        { task: '' },
        '{"task":',
      ),
    }),
  },
);
// An empty answer goes back to the model with a correction; a real one ends the run.
const turnSpec = fc.oneof(
  { weight: 1, arbitrary: fc.record({ text: fc.constantFrom('', 'All done.') }) },
  { weight: 12, arbitrary: fc.record({ calls: fc.array(callSpec, { minLength: 1, maxLength: 6 }) }) },
);

const DECISIONS = [
  'approve',
  'approve_wrong_hash',
  'approve_edited',
  'approve_edited_stale_hash',
  'approve_edited_invalid',
  'reject',
  'expire',
  'unknown',
] as const;
type DecisionPlan = (typeof DECISIONS)[number];
/** Plans that approve exactly what runs: the shown arguments, or valid edited ones with their hash. */
const APPROVES_WHAT_RUNS = new Set<DecisionPlan>(['approve', 'approve_edited']);

/** What happens next while a turn waits: a decision on a gated call, a child ending, or a cancel. */
const eventSpec = fc.record({
  pick: fc.nat(),
  /** The next waiting call is settled in the same job too. */
  together: fc.boolean(),
  decision: fc.constantFrom(...DECISIONS),
  child: fc.constantFrom('completed', 'completed', 'failed', 'stopped', 'cancelled'),
  childActions: fc.constantFrom<ChildOutcome['actions'][number]['outcome'][]>(
    [],
    ['succeeded'],
    ['rejected', 'outcome_unknown'],
  ),
  /** Share of its caps the child used. */
  spend: fc.oneof(
    { weight: 20, arbitrary: fc.double({ min: 0, max: 0.05, noNaN: true }) },
    { weight: 1, arbitrary: fc.constant(1) },
  ),
  /** The decision or child's end is handed over twice (a redelivered job). */
  replay: fc.boolean(),
  /** 0: the requester cancels the run instead. */
  cancel: fc.nat(60),
});
type EventSpec = typeof eventSpec extends fc.Arbitrary<infer T> ? T : never;

const optionsSpec = fc.record({
  window: fc.integer({ min: 5_000, max: 12_000 }),
  percent: fc.integer({ min: 40, max: 90 }),
  /** The server counts tokens otherwise than the engine's estimate. */
  factor: fc.constantFrom(1, 1.3),
  /** Agent requests the server refuses as too long whatever their size. */
  refuse: fc.uniqueArray(fc.nat(30), { maxLength: 2 }),
  /** With the execution ledger; only then may the worker crash (exactly-once across crashes needs it). */
  durable: fc.boolean(),
  crashes: fc.uniqueArray(fc.record({ op: fc.nat(40), after: fc.boolean() }), {
    maxLength: 6,
    selector: (c) => c.op,
  }),
  /** Every n-th step boundary the worker hands the run back (0: never). */
  yieldEvery: fc.constantFrom(0, 0, 2, 3, 5),
  cancelAtStep: fc.oneof(
    { weight: 6, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }) },
  ),
  jitter: fc.double({ min: 0, max: 0.999, noNaN: true }),
  gatedOutcomes: fc.array(fc.constantFrom<GatedOutcome>('ok', 'ok', 'transient', 'permanent'), {
    maxLength: 10,
  }),
  keepResults: fc.boolean(),
});

interface Scenario {
  turns: Array<{ text: string } | { calls: Array<{ name: string; args: unknown }> }>;
  events: EventSpec[];
  o: typeof optionsSpec extends fc.Arbitrary<infer T> ? T : never;
}

/** Arguments an approver may put in place of the model's: valid ones, or ones the schema refuses. */
function editedArgs(call: GatedCall, valid: boolean): unknown {
  if (call.tool === 'restart') {
    const { service } = call.args as { service: string };
    return { service: valid ? (service === 'payments' ? 'auth' : 'payments') : 'everything' };
  }
  if (call.tool === 'page') return valid ? { text: 'paged by a person', fails: 0 } : { text: '', fails: 0 };
  return { text: valid ? 'written by a person' : '' };
}

function decide(plan: DecisionPlan, call: GatedCall): Decision {
  const base = { toolCallId: call.toolCallId, by: 'UMGR' };
  const edit = (valid: boolean) => {
    const args = editedArgs(call, valid);
    return { args, edited: { args, by: 'UEDIT' } };
  };
  switch (plan) {
    case 'approve':
      return { ...base, kind: 'approved', argsHash: call.argsHash };
    case 'approve_wrong_hash':
      return { ...base, kind: 'approved', argsHash: argsHash({ other: true }) };
    case 'approve_edited': {
      const { args, edited } = edit(true);
      return { ...base, kind: 'approved', argsHash: argsHash(args), edited };
    }
    case 'approve_edited_stale_hash':
      // The card's hash, not the edited arguments': nothing may run.
      return { ...base, kind: 'approved', argsHash: call.argsHash, edited: edit(true).edited };
    case 'approve_edited_invalid': {
      const { args, edited } = edit(false);
      return { ...base, kind: 'approved', argsHash: argsHash(args), edited };
    }
    case 'reject':
      return { ...base, kind: 'rejected', reason: 'not now' };
    case 'expire':
      return { toolCallId: call.toolCallId, kind: 'expired' };
    case 'unknown':
      return { toolCallId: call.toolCallId, kind: 'outcome_unknown' };
  }
}

/** How a child run ended, keeping to its caps (its own engine enforces them). */
function childEnd(c: DelegatedCall, ev: EventSpec): ChildOutcome {
  const completed = ev.child === 'completed';
  return {
    toolCallId: c.toolCallId,
    childRunId: c.childRunId,
    agent: c.agent,
    status: ev.child,
    stopReason: completed ? 'completed' : ev.child === 'cancelled' ? 'cancelled' : 'tool_errors',
    stopMessage: completed ? 'Completed.' : 'It ended early.',
    answer: completed ? `${c.agent} found nothing wrong` : null,
    actions: ev.childActions.map((outcome, i) => ({
      toolCallId: `lg1_${i}_child`,
      tool: 'restart',
      argsHash: 'h',
      outcome,
      summary: outcome,
      agent: c.agent,
    })),
    usage: {
      inputTokens: Math.floor(c.caps.maxTokens * ev.spend),
      outputTokens: 0,
      costUsd: c.caps.maxCostUsd * ev.spend,
      activeMs: Math.floor(c.caps.deadlineMs * ev.spend),
      steps: 1,
    },
  };
}

/** A ledger that forgets what it started: the broken variant the checks must catch. */
const forgetfulLedger: ExecutionLedger = {
  async begin() {
    return { proceed: true };
  },
  async finish() {},
};

interface Report {
  problems: string[];
  final: RunState;
  jobs: number;
  crashes: number;
  compactions: number;
  requests: number;
}

/**
 * Runs a scenario as workers would: each job loads the run from the store, steps it until it pauses,
 * ends, yields, is cancelled or crashes; a paused run's job first applies what was recorded for it
 * (decisions, children's ends: durable, so applied again after a crash), else the next event.
 */
async function runScenario(s: Scenario, sabotage: { ledger?: ExecutionLedger } = {}): Promise<Report> {
  const problems: string[] = [];
  const script: ScriptStep[] = s.turns.map((t) => ('calls' in t ? { calls: t.calls } : { text: t.text }));
  // Replies lost in crashes use up the script: answers enough to end the run anyway.
  for (let i = 0; i < 10; i++) script.push({ text: 'Final.' });
  const server = windowModel(script, { windowTokens: s.o.window, tokenFactor: s.o.factor });
  const agentViews: Message[][] = [];
  let requests = 0;
  const model: ModelPort = {
    model: server.model,
    async complete(req) {
      const problem = viewProblem(req.messages);
      if (problem) problems.push(`request ${requests}: ${problem}`);
      requests++;
      if (!isSummaryRequest(req)) {
        agentViews.push([...req.messages]);
        if (s.o.refuse.includes(agentViews.length - 1)) {
          throw new ModelError('context_length_exceeded', {
            status: 400,
            retryable: false,
            contextExceeded: true,
          });
        }
      }
      return server.complete(req);
    },
  };
  const t = scenarioTools(s.o.gatedOutcomes);
  const clock = manualClock();
  const crash = crashSwitch(s.o.durable ? s.o.crashes : []);
  const ledger = new MemoryLedger();
  const store = new MemoryRunStore(
    newRun({
      maxSteps: 30,
      maxTokens: 100_000_000,
      maxCostUsd: 10_000,
      deadlineMs: 3_600_000,
      maxConsecutiveToolErrors: 8,
      maxAnswerRetries: 2,
      maxObservationChars: 2_000,
      maxToolCallsPerReply: 5,
      maxGatedCallsPerPause: 3,
      maxParallelAgents: 2,
      context: contextLimits({ windowTokens: s.o.window, compactAtPercent: s.o.percent, summaryTokens: 300 }),
    }),
  );
  const deps: EngineDeps = {
    model,
    tools: t.tools,
    clock,
    emit: () => {},
    logger: silentLogger,
    sleep: async (ms) => clock.advance(ms),
    random: () => s.o.jitter,
    checkpoint: (state) =>
      crash.write('checkpoint', () => {
        const problem = historyProblem(state) ?? waitingProblem(state);
        if (problem) problems.push(`checkpoint at step ${state.step}: ${problem}`);
        store.save(state);
      }),
    ...(s.o.durable ? { ledger: sabotage.ledger ?? ledger.port(crash) } : {}),
    ...(s.o.keepResults ? { results: memoryResultStore() } : {}),
  };
  const decided = new Map<string, RecordedDecision & { plan: DecisionPlan }>();
  const ended = new Map<string, ChildOutcome>();
  let boundaryChecks = 0;
  const boundary: Boundary = {
    shouldCancel: (state) => s.o.cancelAtStep !== null && state.step >= s.o.cancelAtStep,
    shouldYield: () => s.o.yieldEvery > 0 && ++boundaryChecks % s.o.yieldEvery === 0,
  };
  const cancel = (state: RunState) => deps.checkpoint!(cancelRun(state, deps, 'UREQ'));

  let e = 0;
  let jobs = 0;
  for (; jobs < 400; jobs++) {
    const state = store.load();
    if (isFinished(state)) break;
    try {
      let outcome: RunOutcome;
      if (state.status === 'running') {
        outcome = await runUntilPause(state, deps, boundary);
      } else {
        const turn = state.turn!;
        const delegated = turn.delegated ?? [];
        // What was recorded for the turn's calls is durable: handed over again after a crash, with what
        // was applied already (a redelivered click or child's end), which must change nothing.
        const decisions = turn.slots.flatMap((slot) => decided.get(slot.toolCallId)?.decision ?? []);
        const children = turn.slots.flatMap((slot) => ended.get(slot.toolCallId) ?? []);
        const unapplied =
          turn.pending.some((g) => decided.has(g.toolCallId)) ||
          delegated.some((c) => ended.has(c.toolCallId));
        if (!unapplied) {
          const ev = s.events[e++ % s.events.length]!;
          if (ev.cancel === 0) {
            await cancel(state);
            continue;
          }
          const waiting = [...turn.pending, ...delegated];
          if (waiting.length === 0) {
            problems.push(`job ${jobs}: the run waits for nothing, so nothing would ever move it on`);
            break;
          }
          const picked = [waiting[ev.pick % waiting.length]!];
          if (ev.together && waiting.length > 1) picked.push(waiting[(ev.pick + 1) % waiting.length]!);
          for (const w of picked) {
            if ('argsHash' in w) {
              const decision = decide(ev.decision, w);
              decided.set(w.toolCallId, { call: w, decision, plan: ev.decision });
              if (decision.kind === 'approved') ledger.approvals.set(w.toolCallId, decision.argsHash!);
              decisions.push(...(ev.replay ? [decision, decision] : [decision]));
            } else {
              const end = childEnd(w, ev);
              ended.set(w.toolCallId, end);
              children.push(...(ev.replay ? [end, end] : [end]));
            }
          }
          clock.advance(10);
        }
        outcome = await settleAndContinue(state, decisions, children, deps, boundary);
      }
      if (outcome.type === 'cancel_requested') await cancel(outcome.state);
    } catch (err) {
      if (!(err instanceof Crash)) throw err;
    }
  }

  const final = store.load();
  if (!isFinished(final)) problems.push(`the run did not end in ${jobs} jobs (${final.status})`);
  const stored = historyProblem(final);
  if (stored) problems.push(`final history: ${stored}`);
  for (const [i, view] of agentViews.entries()) {
    const problem = viewOfHistoryProblem(view, final);
    if (problem) problems.push(`agent request ${i}: ${problem}`);
  }
  problems.push(...gatedExecutionProblems(t.gated, decided, IDEMPOTENT));
  // Exactly once the other way round: an approval of what was shown (or of valid edited arguments) runs
  // the call; only a crash between the ledger's start record and the tool may leave it not run (its
  // outcome then unknown, never run again).
  for (const [id, { call, plan }] of decided) {
    if (!APPROVES_WHAT_RUNS.has(plan)) continue;
    const runs = t.gated.filter((x) => x.toolCallId === id).length;
    const unknown = ledger.entries.get(id)?.status === 'outcome_unknown';
    if (runs === 0 && !unknown) problems.push(`${call.tool} ${id} was approved and never ran`);
  }
  // Reads are retried within their policy (and run again only after a crash lost their results).
  const readRuns = new Map<string, number>();
  for (const r of t.reads) readRuns.set(r.toolCallId, (readRuns.get(r.toolCallId) ?? 0) + 1);
  for (const [id, n] of readRuns) {
    if (n > RETRY.attempts * (1 + crash.crashes.length)) problems.push(`read ${id} ran ${n} times`);
  }
  if (crash.crashes.length === 0) {
    // Each result lists exactly the attempts that failed before it.
    for (const m of final.messages) {
      if (m.role !== 'tool' || m.name !== 'flaky') continue;
      const listed = (JSON.parse(m.content) as { attempts?: unknown[] }).attempts?.length ?? 0;
      const ran = readRuns.get(m.toolCallId) ?? 0;
      if (ran > 0 && listed !== ran - 1)
        problems.push(`flaky ${m.toolCallId} ran ${ran} times, lists ${listed}`);
    }
  }
  const records = (final.subagents ?? []).map((r) => r.toolCallId);
  if (new Set(records).size !== records.length) problems.push('a sub-agent call was settled twice');
  return {
    problems,
    final,
    jobs,
    crashes: crash.crashes.length,
    compactions: final.compactions?.length ?? 0,
    requests,
  };
}

const scenarioSpec = fc.record({
  turns: fc.array(turnSpec, { minLength: 3, maxLength: 25, size: 'medium' }),
  events: fc.array(eventSpec, { minLength: 1, maxLength: 30 }),
  o: optionsSpec,
});

describe('retries, compactions, sub-agents, decisions and crashes interleaved', () => {
  it('one result per call before the next model call, nothing gated unapproved, nothing twice, history append-only', async () => {
    const seen = { compacted: 0, crashed: 0, delegated: 0, executed: 0, retried: 0 };
    await fc.assert(
      fc.asyncProperty(scenarioSpec, async (s) => {
        const report = await runScenario(s);
        expect(report.problems).toEqual([]);
        const history = report.final.messages;
        if (report.compactions > 0) seen.compacted++;
        if (report.crashes > 0) seen.crashed++;
        if ((report.final.subagents ?? []).length > 0) seen.delegated++;
        if (report.final.actions.some((a) => a.outcome === 'succeeded')) seen.executed++;
        if (history.some((m) => m.role === 'tool' && m.content.includes('"attempts"'))) seen.retried++;
      }),
      { numRuns: 150 },
    );
    // The scenarios reach what they are about (not a guarantee of each run, but of the lot).
    for (const [what, n] of Object.entries(seen)) expect(n, what).toBeGreaterThan(5);
  }, 120_000);
});

describe('the checks catch broken variants', () => {
  const system: Message = { role: 'system', content: 'You are loopgate.' };
  const question: Message = { role: 'user', content: 'Is payments healthy?' };
  const ask = (...ids: string[]): Message => ({
    role: 'assistant',
    content: null,
    toolCalls: ids.map((id) => ({ id, name: 'lookup', arguments: '{}' })),
  });
  const result = (id: string): Message => ({ role: 'tool', toolCallId: id, name: 'lookup', content: '{}' });
  const answer: Message = { role: 'assistant', content: 'All fine.' };

  it('a request missing a result, with results out of order, twice, late or orphaned', () => {
    const good = [system, question, ask('a', 'b'), result('a'), result('b'), ask('c'), result('c')];
    expect(viewProblem(good)).toBeNull();
    const broken = {
      dropped: [system, question, ask('a', 'b'), result('a'), ask('c'), result('c')],
      reordered: [system, question, ask('a', 'b'), result('b'), result('a')],
      twice: [system, question, ask('a'), result('a'), result('a')],
      late: [system, question, ask('a'), answer, result('a')],
      unanswered: [system, question, ask('a', 'b'), result('a')],
      orphaned: [system, question, result('z'), answer],
      reusedId: [system, question, ask('a'), result('a'), ask('a'), result('a')],
    };
    for (const [name, view] of Object.entries(broken)) expect(viewProblem(view), name).not.toBeNull();
  });

  it('a stored history: only the last turn may be open', () => {
    const state = newRun();
    const open = { slots: [{ toolCallId: 'a', tool: 'lookup', result: null }], pending: [] };
    expect(historyProblem({ ...state, messages: [system, question, ask('a')], turn: open })).toBeNull();
    expect(historyProblem({ ...state, messages: [system, question, ask('a')], turn: null })).not.toBeNull();
    expect(
      historyProblem({ ...state, messages: [system, question, ask('a'), answer, ask('b')], turn: open }),
    ).not.toBeNull();
  });

  it('a request that is not a view of the stored history', () => {
    const compaction = {
      upTo: 4,
      messages: 7,
      summary: 'I looked up a and b.',
      notes: 'Recorded by loopgate.',
      step: 2,
      at: 0,
      tokensBefore: 900,
      tokensAfter: 300,
      calls: 1,
      usage: { inputTokens: 1, outputTokens: 1 },
      costUsd: 0,
    };
    const base = newRun();
    const final: RunState = {
      ...base,
      messages: [base.messages[0]!, base.messages[1]!, ask('a'), result('a'), ask('b'), result('b'), answer],
      compactions: [compaction],
    };
    const compacted: Message[] = [
      base.messages[0]!,
      { role: 'user', content: base.question },
      { role: 'assistant', content: summaryText(compaction) },
      ask('b'),
      result('b'),
    ];
    expect(viewOfHistoryProblem(final.messages.slice(0, 4), final)).toBeNull();
    expect(viewOfHistoryProblem(compacted, final)).toBeNull();
    const rewritten = { ...result('b'), content: '{"status":"down"}' };
    expect(viewOfHistoryProblem([...compacted.slice(0, 4), rewritten], final)).not.toBeNull();
    expect(viewOfHistoryProblem([...final.messages.slice(0, 3), result('b')], final)).not.toBeNull();
  });

  it('a gated call run unapproved, rejected, with other arguments or hash, or twice', () => {
    const args = { service: 'payments' };
    const call: GatedCall = {
      toolCallId: 'w',
      tool: 'restart',
      effect: 'write',
      args,
      argsHash: argsHash(args),
      idempotent: false,
    };
    const approved = new Map([['w', { call, decision: decide('approve', call) }]]);
    const edited = new Map([['w', { call, decision: decide('approve_edited', call) }]]);
    const run = (a: unknown = args) => ({ tool: 'restart', toolCallId: 'w', args: a });
    expect(gatedExecutionProblems([run()], approved, IDEMPOTENT)).toEqual([]);
    expect(gatedExecutionProblems([run({ service: 'auth' })], edited, IDEMPOTENT)).toEqual([]);
    expect(gatedExecutionProblems([run()], new Map(), IDEMPOTENT)).toHaveLength(1);
    const rejected = new Map([['w', { call, decision: decide('reject', call) }]]);
    expect(gatedExecutionProblems([run()], rejected, IDEMPOTENT)).toHaveLength(1);
    // The edit was approved, the model's arguments ran.
    expect(gatedExecutionProblems([run()], edited, IDEMPOTENT)).toHaveLength(2);
    const wrongHash = new Map([['w', { call, decision: decide('approve_wrong_hash', call) }]]);
    expect(gatedExecutionProblems([run()], wrongHash, IDEMPOTENT)).toHaveLength(1);
    expect(gatedExecutionProblems([run(), run()], approved, IDEMPOTENT)).toEqual([
      'restart w executed twice',
    ]);
    const page = { ...call, tool: 'page' };
    const pageApproved = new Map([['w', { call: page, decision: decide('approve', page) }]]);
    const pageRun = { ...run(), tool: 'page' };
    expect(gatedExecutionProblems([pageRun, pageRun], pageApproved, IDEMPOTENT)).toEqual([]);
  });

  it('a save that rewrites or drops what the store holds, and a run left waiting for nothing', () => {
    const stored: RunState = { ...newRun(), messages: [system, question, ask('a'), result('a')] };
    expect(appendOnlyProblem(stored, { ...stored, messages: [...stored.messages, answer] })).toBeNull();
    const messages = [...stored.messages];
    messages[3] = { ...result('a'), content: '{"status":"down"}' };
    expect(appendOnlyProblem(stored, { ...stored, messages })).toMatch(/messages\[3\] was rewritten/);
    expect(appendOnlyProblem(stored, { ...stored, messages: stored.messages.slice(0, 3) })).toMatch(/shrank/);
    const limits = { ...stored.limits, maxSteps: 99 };
    expect(appendOnlyProblem(stored, { ...stored, limits })).toMatch(/limits/);
    const slots = [{ toolCallId: 'a', tool: 'lookup', result: null }];
    const waiting: RunState = {
      ...stored,
      status: 'awaiting_approval',
      stopReason: null,
      stopMessage: null,
      turn: { slots, pending: [] },
    };
    expect(waitingProblem(waiting)).not.toBeNull();
  });

  it('a ledger that forgets what it started lets a crash run an approved write twice', async () => {
    // One write, approved; the worker crashes before or after each durable write in turn. The real
    // ledger runs it once whatever the crash; a forgetful one runs it again on recovery.
    const scenario = (op: number, after: boolean): Scenario => ({
      turns: [{ calls: [{ name: 'restart', args: { service: 'payments' } }] }],
      events: [
        {
          pick: 0,
          together: false,
          decision: 'approve',
          child: 'completed',
          childActions: [],
          spend: 0,
          replay: false,
          cancel: 1,
        },
      ],
      o: {
        window: 12_000,
        percent: 90,
        factor: 1,
        refuse: [],
        durable: true,
        crashes: [{ op, after }],
        yieldEvery: 0,
        cancelAtStep: null,
        jitter: 0,
        gatedOutcomes: [],
        keepResults: false,
      },
    });
    const caught: string[] = [];
    for (let op = 0; op < 8; op++) {
      for (const after of [false, true]) {
        const real = await runScenario(scenario(op, after));
        expect(real.problems, `crash ${after ? 'after' : 'before'} write ${op}`).toEqual([]);
        const broken = await runScenario(scenario(op, after), { ledger: forgetfulLedger });
        caught.push(...broken.problems);
      }
    }
    expect(caught).toContain('restart lg1_0_call_0 executed twice');
  });
});
