/**
 * `loopgate/testing`: one call of a custom tool through the path production takes, without Slack, Redis
 * or a model: the loader's checks and wrapping (declared secrets, guarded `ctx.http`), the engine's
 * argument preparation (JSON, bounds, schema), the policy gate of a write or notify call (which rule
 * decides, who would be asked), the preview and plan, the plan check before execution, the execution with its timeout and retries, and the
 * verification of an approved call.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parsePolicy } from '../config/policy.js';
import { type CallContext, executeCall, previewCall, verifyCall } from '../loop/execute.js';
import type { CallPlan } from '../loop/gated-calls.js';
import { checkPlan, planCall } from '../loop/plan.js';
import { prepareCall } from '../loop/prepare.js';
import { realSleep, retryPlanFor } from '../loop/retry.js';
import { createRun, DEFAULT_LIMITS } from '../loop/state.js';
import type { Logger, VerifyResult } from '../loop/tool-contract.js';
import type { ToolResult } from '../loop/tool-result.js';
import { decideGate, type GateDecision } from '../policy/gate.js';
import type { AnyCustomTool } from '../tools/custom/tool-api.js';
import { checkedTool, wrapCustomTool } from '../tools/custom-tools.js';
import type { Lookup } from '../tools/net/lookup.js';
import { allowEntry, resolveAllowRules } from '../tools/settings.js';

/** One call to try. */
export interface ToolCallTest {
  /** The tool, as the package exports it. */
  tool: AnyCustomTool;
  /** The arguments as the model sends them: a JSON string as is, anything else serialised. */
  args: unknown;
  /**
   * The policy (loopgate.yaml text, or the same as an object): approvers and `rules.<tool>`. The tool
   * needs no `custom:` entry here. Default: `approvals: { approvers: [U0APPROVER] }`.
   */
  policy?: string | Record<string, unknown>;
  /** The environment: values of the tool's declared secrets, and of `headersEnv` in `allow`. */
  env?: Record<string, string>;
  /** The allowlist of `ctx.http`, as under `custom: [{ allow }]`: `https://x/` or `{ prefix, allowPrivate, headersEnv }`. */
  allow?: unknown[];
  /** Slack user id of the requester; default `U0REQUESTER`. */
  requester?: string;
  /** The approver's answer when the policy asks people; default `approve`. */
  decision?: 'approve' | 'reject';
  /** Host name resolution for `ctx.http` (e.g. to point a public name at a local server). */
  lookup?: Lookup;
  /**
   * Called after the approver's answer and before the plan is computed again for execution: change the
   * world here (e.g. the fake server's state) to see what a changed plan does. Default: nothing.
   */
  beforeExecution?: () => void | Promise<void>;
}

/** What the policy decided for a write or notify call, as `loopgate policy test` shows it. */
export interface GateReport {
  kind: 'allow' | 'deny' | 'ask';
  /** The rule that decided (`rule 2 of restart_service (prod)`), or null for the tool's default ask. */
  rule: string | null;
  /** Whom a card would ask (ask only). */
  approvers?: { users: string[]; groups: string[] };
  quorum?: number;
  /** Why it was denied (deny only). */
  reason?: string;
}

/** One line the tool logged through `ctx.logger`, with the bindings of its logger. */
export interface LoggedLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string | undefined;
  [key: string]: unknown;
}

export interface ToolCallReport {
  /** The error the model would read when the arguments were refused before anything ran. */
  refused?: ToolResult;
  /** The validated arguments (after the schema's defaults and transforms). */
  args?: unknown;
  /** The policy's decision; null for a read tool (reads run without one). */
  gate: GateReport | null;
  /** The approval card's preview text, for a call that asks people. */
  preview?: string;
  /** The tool's plan as the card shows it (a tool with `plan`, a call that asks people). */
  plan?: CallPlan;
  /**
   * The plan computed again immediately before execution, when it differed from the shown one: the call
   * did not run, and production would ask the approvers again with this plan.
   */
  planChanged?: CallPlan;
  /** Whether `execute` ran. */
  ran: boolean;
  /** What the model would read: the result, or the failure with its code. */
  result?: ToolResult;
  /** The verification after a successful write or notify, when the tool has `verify`. */
  verification?: VerifyResult | null;
  logs: LoggedLine[];
}

function recordingLogger(lines: LoggedLine[], bindings: Record<string, unknown> = {}): Logger {
  const at =
    (level: LoggedLine['level']) =>
    (obj: object, msg?: string): void => {
      lines.push({ ...bindings, ...obj, level, msg });
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => recordingLogger(lines, { ...bindings, ...more }),
  };
}

/** The test's policy, with a `custom:` entry naming the tool so rules may be written for it. */
function policyFor(tool: AnyCustomTool, given: ToolCallTest['policy']) {
  const raw = (typeof given === 'string' ? parseYaml(given) : given) ?? {
    approvals: { approvers: ['U0APPROVER'] },
  };
  const doc = z.record(z.string(), z.unknown()).parse(raw);
  const custom = z.array(z.unknown()).parse(doc.custom ?? []);
  const named = custom.some(
    (e) => typeof e === 'object' && e !== null && (e as { name?: unknown }).name === tool.name,
  );
  const withTool = { ...doc, custom: named ? custom : [...custom, { path: '(test)', name: tool.name }] };
  return parsePolicy(JSON.stringify(withTool), { env: {}, source: 'test policy' });
}

function gateReport(decision: GateDecision): GateReport {
  if (decision.kind === 'allow') return { kind: 'allow', rule: decision.rule.label };
  if (decision.kind === 'deny') return { kind: 'deny', rule: decision.rule.label, reason: decision.reason };
  return {
    kind: 'ask',
    rule: decision.rule?.label ?? null,
    approvers: { users: [...decision.approvers.users], groups: [...decision.approvers.groups] },
    quorum: decision.quorum,
  };
}

/**
 * Runs one call of `test.tool` as loopgate would, and reports each stage. Never contacts Slack, Redis or
 * a model; `ctx.http` reaches only the URLs in `test.allow`.
 * @throws ConfigError when the tool or the policy is invalid, as start-up would refuse them.
 */
export async function runToolCall(test: ToolCallTest): Promise<ToolCallReport> {
  const env = test.env ?? {};
  const checked = checkedTool(`tool ${String((test.tool as { name?: unknown }).name)}`, test.tool);
  const missing = (checked.secrets ?? []).filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new Error(`${checked.name} needs environment variable ${missing.join(', ')}: give it in env`);
  }
  const allow = z.array(allowEntry).parse(test.allow ?? []);
  const rules = resolveAllowRules(allow, env, 'allow');
  const tool = wrapCustomTool(checked, { env, rules, ...(test.lookup ? { lookup: test.lookup } : {}) });
  const policy = policyFor(checked, test.policy);
  const logs: LoggedLine[] = [];
  const state = createRun({
    runId: 'test-run',
    requester: { userId: test.requester ?? 'U0REQUESTER' },
    systemPrompt: '',
    question: '',
    now: Date.now(),
  });
  const args = typeof test.args === 'string' ? test.args : JSON.stringify(test.args ?? {});
  const prepared = prepareCall(
    { id: 'call-1', name: tool.name, arguments: args },
    new Map([[tool.name, tool]]),
    state,
  );
  if (prepared.kind === 'error') return { refused: prepared.result, gate: null, ran: false, logs };
  const ctx: CallContext = {
    runId: state.runId,
    toolCallId: 'call-1',
    threadId: 'C0TEST:1700000000.000100',
    requester: state.requester,
    logger: recordingLogger(logs, { runId: state.runId, toolCallId: 'call-1' }),
  };
  const timeoutMs = tool.timeoutMs ?? DEFAULT_LIMITS.toolTimeoutMs;
  const limits = {
    timeoutMs,
    maxObservationChars: DEFAULT_LIMITS.maxObservationChars,
    ...retryPlanFor(tool),
    sleep: realSleep,
    random: Math.random,
  };
  if (prepared.kind !== 'gated') {
    const { result } = await executeCall(tool, prepared.args, ctx, limits);
    return { args: prepared.args, gate: null, ran: true, result, logs };
  }
  const decision = decideGate(policy, tool.name, prepared.args, Date.now());
  const gate = gateReport(decision);
  const preview =
    decision.kind === 'ask' ? await previewCall(tool, prepared.args, ctx, timeoutMs) : undefined;
  const plan = decision.kind === 'ask' ? await planCall(tool, prepared.args, ctx, timeoutMs) : undefined;
  const shown = { ...(preview === undefined ? {} : { preview }), ...(plan === undefined ? {} : { plan }) };
  if (decision.kind === 'deny' || (decision.kind === 'ask' && test.decision === 'reject')) {
    return { args: prepared.args, gate, ...shown, ran: false, logs };
  }
  await test.beforeExecution?.();
  if (tool.plan) {
    // As the worker does: the plan again, immediately before execution; it runs only on the same plan.
    const check = await checkPlan(tool, prepared.args, plan, ctx, timeoutMs);
    if (check.kind === 'changed')
      return { args: prepared.args, gate, ...shown, planChanged: check.current, ran: false, logs };
    if (check.kind === 'failed') {
      const result: ToolResult = {
        ok: false,
        error: {
          code: 'plan_failed',
          message: `Not executed: the plan could not be computed before it ran (${check.error}).`,
        },
      };
      return { args: prepared.args, gate, ...shown, ran: false, result, logs };
    }
  }
  const executed = await executeCall(tool, prepared.args, ctx, limits);
  const verification = executed.result.ok
    ? await verifyCall(tool, prepared.args, executed.raw, ctx, timeoutMs)
    : null;
  return { args: prepared.args, gate, ...shown, ran: true, result: executed.result, verification, logs };
}
