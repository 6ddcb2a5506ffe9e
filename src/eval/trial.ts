/**
 * One trial of one task: the task's world is started, its policy filled in and loaded like loopgate
 * loads any policy, the real tool registry built from it (with an `ask_<agent>` tool per sub-agent of
 * `agents:`), and the real engine run in process on the question (then on each scripted follow-up of the
 * user). Each pause is settled as the worker settles it: the policy's rules and the scripted approver
 * decide the gated calls (approver.ts), and each sub-agent call is answered by a child run made and run to
 * its end in process (its own approvals decided the same way), whose end is handed to the parent. Every run
 * gets a store for its long results, so compaction and `read_result` work as in the worker. No Slack, no
 * Redis: what is measured is the model, the prompt, the tools and the policy.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { askTool } from '../agents/ask-tool.js';
import { type AgentDefinition, agentDefinitions } from '../agents/catalog.js';
import { newChildRun } from '../agents/child-run.js';
import { toolsOfAgent } from '../agents/run-ports.js';
import { unknownAgentTools } from '../config/agents.js';
import { ConfigError } from '../config/errors.js';
import type { Policy } from '../config/policy.js';
import { parsePolicy } from '../config/policy.js';
import { limitsFromPolicy } from '../config/policy-limits.js';
import { outcomeOfChild } from '../loop/delegate.js';
import type { EngineEvent } from '../loop/engine-events.js';
import type { Message } from '../loop/messages.js';
import type { ModelPort } from '../loop/model-port.js';
import type { EngineDeps } from '../loop/ports.js';
import { type RunOutcome, runUntilPause, settleAndContinue } from '../loop/run.js';
import type { ModelPrice, RunLimits } from '../loop/run-limits.js';
import type { RunState } from '../loop/run-state.js';
import { createRun, currentTimeNote, isFinished } from '../loop/state.js';
import type { ChildOutcome, DelegatedCall } from '../loop/subagents.js';
import type { AnyTool, Logger } from '../loop/tool-contract.js';
import { buildTools } from '../tools/registry.js';
import { buildSystemPrompt } from '../tools/system-prompt.js';
import { type ApprovalContext, decideCall, type RulesMode } from './approver.js';
import { asksSomething } from './graders/checks.js';
import { memoryResultStore } from './memory-results.js';
import { fillPlaceholders } from './merge.js';
import type { LoadedTask, Suite } from './suite.js';
import { type AskedApproval, type CallRecord, callsOf, type Transcript } from './transcript.js';
import { startWorld } from './world/world-server.js';
import { snapshot } from './world/world-state.js';

/** The routing key the policy's page_oncall reads (the world's PagerDuty accepts any). */
const ENV = { EVAL_PD_ROUTING_KEY: 'eval-routing-key' };

interface TrialInput {
  suite: Suite;
  task: LoadedTask;
  /** 1-based. */
  trial: number;
  /**
   * Builds the model of this trial's runs: the person's, or with `agent` a sub-agent's; `placeholders`
   * hold the world's URL (the oracle needs it).
   */
  model: (placeholders: Readonly<Record<string, string>>, agent?: string) => ModelPort;
  /** Default enforce: the policy's rules decide as in production. */
  rules?: RulesMode;
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
  /** Every tool, the agents' ask_ tools included: what a person's run is offered. */
  tools: ReadonlyMap<string, AnyTool>;
  agents: ReadonlyMap<string, AgentDefinition>;
  /** The model of a sub-agent's runs. */
  agentModel: (agent: string) => ModelPort;
  asked: AskedApproval[];
  children: { run: number; state: RunState }[];
  requester: string;
}

/** Where a run stands: the person's run it belongs to, the sub-agent running it, its engine deps. */
interface RunPlace {
  run: number;
  agent?: string;
  deps: EngineDeps;
}

/**
 * Settles each pause until the run ends, as the worker would: the gated calls decided (by the rules or
 * the scripted approver), the sub-agent calls answered by child runs, then the engine goes on.
 */
async function untilEnd(first: RunOutcome, place: RunPlace, input: TrialInput, c: Conversation) {
  let outcome = first;
  while (outcome.type === 'interruption') {
    const paused = outcome.state;
    const ctx: ApprovalContext = {
      policy: c.policy,
      tools: place.deps.tools,
      rules: input.rules ?? 'enforce',
      approver: input.task.spec.approver,
      requester: c.requester,
      run: place.run,
      ...(place.agent ? { agent: place.agent } : {}),
    };
    const verdicts = outcome.gated.map((call) => decideCall(ctx, call));
    for (const v of verdicts) c.asked.push(...v.records);
    // Children of one turn work at the same time, as the worker runs them.
    const ends = await Promise.all(
      (outcome.delegated ?? []).map((call) => childRun(paused, call, place, input, c)),
    );
    outcome = await settleAndContinue(
      paused,
      verdicts.map((v) => v.decision),
      ends,
      place.deps,
    );
  }
  return outcome.state;
}

/** The run answering a sub-agent call, made and run to its end; its end as the parent reads it. */
async function childRun(
  parent: RunState,
  call: DelegatedCall,
  place: RunPlace,
  input: TrialInput,
  c: Conversation,
): Promise<ChildOutcome> {
  const agent = c.agents.get(call.agent);
  const tools = agent ? toolsOfAgent(c.tools, agent) : new Map<string, AnyTool>();
  const child = newChildRun(parent, call, agent, [...tools.keys()], place.deps.clock.now());
  let ended = child;
  if (!isFinished(child)) {
    const deps: EngineDeps = {
      ...place.deps,
      tools,
      model: c.agentModel(call.agent),
      results: memoryResultStore(),
    };
    const childPlace: RunPlace = { run: place.run, agent: call.agent, deps };
    ended = await untilEnd(await runUntilPause(child, deps), childPlace, input, c);
  }
  c.children.push({ run: place.run, state: ended });
  return outcomeOfChild(call.toolCallId, ended);
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
      }),
      history,
      question,
      questionNote: currentTimeNote(now),
      limits: c.limits,
      now,
    });
    const deps = { ...c.deps, results: memoryResultStore() };
    const ended = await untilEnd(await runUntilPause(state, deps), { run, deps }, input, c);
    runs.push(ended);
    const answer = ended.answer ? ended.answer.join('\n\n') : null;
    const next = followUps.shift();
    if (!next || answer === null || (next.when === 'asked' && !asksSomething(answer))) break;
    history = history.concat({ role: 'user', content: question }, { role: 'assistant', content: answer });
    question = next.say;
  }
  return runs;
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
    const own = await buildTools(policy, { env: ENV, slack: world.slack });
    const agents = agentDefinitions(policy.agents);
    const problems = unknownAgentTools(policy.agents, new Set(own.keys()), []);
    if (problems.length > 0) throw new ConfigError(policy.source, problems);
    const tools = new Map<string, AnyTool>([
      ...own,
      ...[...agents.values()].map((a) => [askTool(a).name, askTool(a)] as const),
    ]);
    const events: EngineEvent[] = [];
    const model = input.model(values);
    const fromPolicy = limitsFromPolicy(policy, model.model);
    const conversation: Conversation = {
      deps: {
        model,
        tools,
        clock: { now: () => Date.now() },
        emit: (e) => events.push(e),
        logger: input.logger.child({ task: input.task.spec.id, trial: input.trial }),
      },
      policy,
      limits: { ...fromPolicy, prices: { ...fromPolicy.prices, ...input.prices } },
      tools,
      agents,
      agentModel: (agent) => input.model(values, agent),
      asked: [],
      children: [],
      requester: input.task.spec.requester ?? input.suite.spec.requester,
    };
    const runs = await converse(input, conversation);
    const isGated = (tool: string) => (tools.get(tool)?.effect ?? 'read') !== 'read';
    const calls: CallRecord[] = [
      ...runs.flatMap((r, i) => callsOf(r, i, isGated)),
      ...conversation.children.flatMap((ch) => callsOf(ch.state, ch.run, isGated, ch.state.agent?.name)),
    ];
    const answers = runs.map((r) => (r.answer ? r.answer.join('\n\n') : null));
    return {
      runs,
      children: conversation.children,
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
