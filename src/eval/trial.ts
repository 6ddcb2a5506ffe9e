/**
 * One trial of one task: the task's world is started, its policy filled in and loaded like loopgate
 * loads any policy, the real tool registry built from it, and the real engine run in process on the
 * question (then on each scripted follow-up of the user), with the scripted approver deciding each
 * pause. No Slack, no Redis: what is measured is the model, the prompt, the tools and the policy.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Policy } from '../config/policy.js';
import { parsePolicy } from '../config/policy.js';
import { limitsFromPolicy } from '../config/policy-limits.js';
import { decideAndContinue, type RunOutcome, runUntilPause } from '../loop/run.js';
import { createRun } from '../loop/state.js';
import type {
  AnyTool,
  Decision,
  EngineDeps,
  EngineEvent,
  GatedCall,
  Logger,
  Message,
  ModelPort,
  ModelPrice,
  RunLimits,
  RunState,
} from '../loop/types.js';
import { buildTools } from '../tools/registry.js';
import { buildSystemPrompt } from '../tools/system-prompt.js';
import { decide, defaultApprover } from './approver.js';
import type { EvalIntegrations } from './features.js';
import { asksSomething } from './graders/checks.js';
import { fillPlaceholders } from './merge.js';
import type { LoadedTask, Suite } from './suite.js';
import { type AskedApproval, type CallRecord, callsOf, type Transcript } from './transcript.js';
import { startWorld } from './world/world-server.js';
import { snapshot } from './world/world-state.js';

/** The routing key the policy's page_oncall reads (the world's PagerDuty accepts any). */
const ENV = { EVAL_PD_ROUTING_KEY: 'eval-routing-key' };

export interface TrialInput {
  suite: Suite;
  task: LoadedTask;
  /** 1-based. */
  trial: number;
  /** Builds the model for this trial; `placeholders` hold the world's URL (the oracle needs it). */
  model: (placeholders: Readonly<Record<string, string>>) => ModelPort;
  integrations: EvalIntegrations;
  logger: Logger;
  /** Prices by model name, added to the policy's. */
  prices?: Record<string, ModelPrice>;
}

/** The suite's runbooks and the task's own, with `${WORLD}` filled in, in a folder of the trial's. */
async function runbooksFor(suite: Suite, task: LoadedTask, values: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `loopgate-eval-${task.spec.id}-`));
  const files: Record<string, string> = {};
  if (suite.runbooksDir) {
    for (const name of (await readdir(suite.runbooksDir)).filter((n) => n.endsWith('.md'))) {
      files[name] = await readFile(join(suite.runbooksDir, name), 'utf8');
    }
  }
  Object.assign(files, task.world.runbooks);
  for (const [name, text] of Object.entries(files))
    await writeFile(join(dir, name), fillPlaceholders(text, values));
  return dir;
}

function policyFor(input: TrialInput, values: Record<string, string>): Policy {
  const filled = fillPlaceholders(input.task.policy, values);
  return parsePolicy(JSON.stringify(filled), {
    env: ENV,
    baseDir: input.suite.dir,
    source: `${input.task.spec.id} (policy.yaml with the task's policy)`,
  });
}

interface Conversation {
  deps: EngineDeps;
  policy: Policy;
  limits: RunLimits;
  tools: Map<string, AnyTool>;
  asked: AskedApproval[];
  requester: string;
}

/** A rule's verdict when the runner enforces rules (as the worker would), else null: ask the person. */
function ruleDecision(input: TrialInput, c: Conversation, call: GatedCall): Decision | null {
  const rules = input.integrations.rules;
  if (!rules?.enforcedByRunner) return null;
  const verdict = rules.verdict(c.policy, call);
  if (verdict.kind === 'ask') return null;
  const by = `rule:${verdict.rule}`;
  return verdict.kind === 'allow'
    ? { toolCallId: call.toolCallId, kind: 'approved', argsHash: call.argsHash, by }
    : {
        toolCallId: call.toolCallId,
        kind: 'rejected',
        by,
        reason: `denied by the policy rule ${verdict.rule}`,
      };
}

/** How one gated call is decided: a decision for the engine, or an edit for the edit hook. */
type Verdict =
  | { kind: 'decision'; decision: Decision; record: AskedApproval }
  | { kind: 'edit'; call: GatedCall; args: Record<string, unknown>; by: string; record: AskedApproval };

function verdictFor(call: GatedCall, run: number, input: TrialInput, c: Conversation): Verdict {
  const byRule = ruleDecision(input, c, call);
  if (byRule) {
    const decision = byRule.kind === 'approved' ? 'approved' : 'rejected';
    return {
      kind: 'decision',
      decision: byRule,
      record: { run, call, decision, decidedBy: 'rule', ruleWouldAllow: decision === 'approved' },
    };
  }
  const rules = input.integrations.rules;
  const ruleWouldAllow = rules ? rules.verdict(c.policy, call).kind === 'allow' : null;
  const scripted = decide(input.task.spec.approver, call, (tool) =>
    defaultApprover(c.policy, tool, c.requester),
  );
  if (scripted.kind === 'edit') {
    const args = { ...(call.args as Record<string, unknown>), ...scripted.args };
    const record: AskedApproval = {
      run,
      call,
      decision: 'edited',
      decidedBy: 'person',
      by: scripted.by,
      ruleWouldAllow,
    };
    return { kind: 'edit', call, args, by: scripted.by, record };
  }
  const d = scripted.decision;
  const record: AskedApproval = {
    run,
    call,
    decision: d.kind === 'approved' || d.kind === 'rejected' ? d.kind : 'expired',
    decidedBy: 'person',
    ...(d.by ? { by: d.by } : {}),
    ...(d.reason ? { reason: d.reason } : {}),
    ruleWouldAllow,
  };
  return { kind: 'decision', decision: d, record };
}

/**
 * Decides each pause until the run ends: decisions first (the run stays paused while an edited call is
 * pending), then each edit through the edit hook.
 */
async function untilEnd(
  first: RunOutcome,
  run: number,
  input: TrialInput,
  c: Conversation,
): Promise<RunState> {
  let outcome = first;
  while (outcome.type === 'interruption') {
    const verdicts = outcome.gated.map((call) => verdictFor(call, run, input, c));
    c.asked.push(...verdicts.map((v) => v.record));
    const decisions = verdicts.flatMap((v) => (v.kind === 'decision' ? [v.decision] : []));
    if (decisions.length > 0) outcome = await decideAndContinue(outcome.state, decisions, c.deps);
    for (const v of verdicts) {
      if (v.kind !== 'edit' || outcome.type !== 'interruption') continue;
      // Tasks with edits are skipped unless the hook exists (features.ts); this only guards the types.
      const edit = input.integrations.edit;
      if (!edit) throw new Error(`task ${input.task.spec.id} edits a call, and no edit hook is installed`);
      outcome = await edit(outcome.state, v.call, v.args, v.by, c.deps);
    }
  }
  return outcome.state;
}

async function converse(input: TrialInput, c: Conversation): Promise<RunState[]> {
  const { task, suite } = input;
  const runs: RunState[] = [];
  let history: Message[] = [];
  let question = task.spec.question;
  const followUps = [...task.spec.user];
  for (let run = 0; ; run++) {
    const now = Date.now();
    const state = createRun({
      runId: `eval-${task.spec.id}-${input.trial}-${run}`,
      requester: { userId: c.requester },
      systemPrompt: buildSystemPrompt({
        channelPrompt: c.policy.channels.prompt[suite.spec.channel],
        toolNames: [...c.tools.keys()],
        now: new Date(now),
      }),
      history,
      question,
      limits: c.limits,
      now,
    });
    const ended = await untilEnd(await runUntilPause(state, c.deps), run, input, c);
    runs.push(ended);
    const answer = ended.answer ? ended.answer.join('\n\n') : null;
    const next = followUps.shift();
    if (!next || answer === null || (next.when === 'asked' && !asksSomething(answer))) break;
    history = history.concat({ role: 'user', content: question }, { role: 'assistant', content: answer });
    question = next.say;
  }
  return runs;
}

/** The engine deps with the hooks of the capabilities the task needs (present, or it was skipped). */
function withFeatureHooks(input: TrialInput, policy: Policy, deps: EngineDeps): EngineDeps {
  const { needs } = input.task.spec;
  const { subAgents, compaction } = input.integrations;
  let out = deps;
  if (needs.includes('sub_agents') && subAgents) out = subAgents(out, policy);
  if (needs.includes('context_compaction') && compaction) out = compaction(out, policy);
  return out;
}

/**
 * Runs one trial and returns its transcript.
 * @throws ConfigError when the task's policy cannot be loaded; anything the world or tools throw.
 */
export async function runTrial(input: TrialInput): Promise<Transcript> {
  const started = performance.now();
  const world = await startWorld(input.task.world);
  let runbooks: string | undefined;
  try {
    const values: Record<string, string> = { WORLD: world.url, RUNBOOKS: '' };
    runbooks = await runbooksFor(input.suite, input.task, values);
    values.RUNBOOKS = runbooks;
    const policy = policyFor(input, values);
    const tools = await buildTools(policy, { env: ENV, slack: world.slack });
    const events: EngineEvent[] = [];
    const fromPolicy = limitsFromPolicy(policy);
    const conversation: Conversation = {
      deps: withFeatureHooks(input, policy, {
        model: input.model(values),
        tools,
        clock: { now: () => Date.now() },
        emit: (e) => events.push(e),
        logger: input.logger.child({ task: input.task.spec.id, trial: input.trial }),
      }),
      policy,
      limits: { ...fromPolicy, prices: { ...fromPolicy.prices, ...input.prices } },
      tools,
      asked: [],
      requester: input.task.spec.requester ?? input.suite.spec.requester,
    };
    const runs = await converse(input, conversation);
    const isGated = (tool: string) => (tools.get(tool)?.effect ?? 'read') !== 'read';
    const calls: CallRecord[] = runs.flatMap((r, i) => callsOf(r, i, isGated));
    const answers = runs.map((r) => (r.answer ? r.answer.join('\n\n') : null));
    return {
      runs,
      calls,
      asked: conversation.asked,
      answer: answers.at(-1) ?? null,
      answers,
      stopReason: runs.at(-1)?.stopReason ?? null,
      world: snapshot(world.state),
      wallMs: Math.round(performance.now() - started),
      answerRejections: events.filter((e) => e.type === 'answer_rejected').length,
      toolRetries: events.filter((e) => e.type === 'tool_retried').length,
    };
  } finally {
    await world.close();
    if (runbooks) await rm(runbooks, { recursive: true, force: true });
  }
}
