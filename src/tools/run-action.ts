/**
 * write `run_action`: the operator-declared actions of the policy file (restart a service, roll back a
 * deploy…), each filled with validated parameters into an HTTP call or a command template. The model
 * never writes a URL or a command line; the approver sees the exact request or argv before it runs, and
 * an optional verify step (a GET expecting 2xx) checks the outcome afterwards.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from '../loop/define-tool.js';
import type { AnyTool, ToolContext, VerifyResult } from '../loop/tool-contract.js';
import { HttpStatusError, ToolError } from './errors.js';
import { decodeBody, formatBody } from './net/body-format.js';
import { exchange } from './net/http-client.js';
import { retryAfterMs } from './net/retry-after.js';
import { timeLimit } from './net/time-limit.js';
import { clip, codeBlock, inlineCode } from './preview-format.js';
import {
  describeActions,
  type RunActionArgs,
  refusedParams,
  runActionParameters,
} from './run-action/action-params.js';
import { runPlanStep } from './run-action/action-plan.js';
import type { ActionSettings, RunActionSettings } from './run-action/action-settings.js';
import { fill, fillJson, fillUrl, type ParamValue } from './run-action/placeholders.js';
import { runCommand } from './run-action/run-command.js';
import { type Env, readSecret } from './settings.js';

/** A declared action with its parameters filled in: exactly what runs. */
type Planned =
  | { kind: 'command'; argv: string[] }
  | { kind: 'http'; method: string; url: string; body: unknown; secretHeaders: string[] };

/**
 * Fills the templates. The parameters were validated already; the refusals are repeated here because
 * this is where a value becomes an argument or a URL.
 */
function filled(action: ActionSettings, params: Record<string, ParamValue>): Planned {
  const [refused] = refusedParams(action, params);
  if (refused) throw new ToolError('argument_refused', `parameter ${refused.name} ${refused.problem}`);
  if (action.command) return { kind: 'command', argv: action.command.map((arg) => fill(arg, params)) };
  if (!action.http) throw new ToolError('action_misconfigured', 'action has neither http nor command');
  return {
    kind: 'http',
    method: action.http.method,
    url: resolvedUrl(action.http.url, params),
    body: action.http.body === undefined ? undefined : fillJson(action.http.body, params),
    secretHeaders: Object.keys(action.http.headersEnv),
  };
}

/** The filled URL as it will be requested (parsed and serialised once), so the preview shows that string. */
function resolvedUrl(template: string, params: Record<string, ParamValue>): string {
  return new URL(fillUrl(template, params)).href;
}

/** How a shell would need the argument quoted; only for showing the command to a person. */
function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

function previewOf(
  name: string,
  action: ActionSettings,
  planned: Planned,
  params: Record<string, ParamValue>,
): string {
  const lines = [`**Action ${inlineCode(name)}**: ${action.description}`];
  if (planned.kind === 'command') {
    lines.push(
      'Runs this command (no shell, one argument per word shown):',
      codeBlock(planned.argv.map(shellQuote).join(' ')),
    );
  } else {
    lines.push(`Sends **${planned.method}** ${inlineCode(planned.url)}`);
    if (planned.body !== undefined)
      lines.push(codeBlock(clip(JSON.stringify(planned.body, null, 2)), 'json'));
    if (planned.secretHeaders.length > 0) {
      lines.push(`Headers from the environment (values hidden): ${planned.secretHeaders.join(', ')}`);
    }
  }
  if (action.verify)
    lines.push(
      `Then checks ${inlineCode(`GET ${resolvedUrl(action.verify.http_get, params)}`)} for a 2xx status.`,
    );
  return lines.join('\n');
}

function secretHeadersOf(
  actions: RunActionSettings['actions'],
  env: Env,
): Map<string, Record<string, string>> {
  return new Map(
    Object.entries(actions).map(([name, action]) => [
      name,
      Object.fromEntries(
        Object.entries(action.http?.headersEnv ?? {}).map(([header, envName]) => [
          header,
          readSecret(env, envName, `tools.run_action.actions.${name}.http.headersEnv.${header}`),
        ]),
      ),
    ]),
  );
}

/**
 * Each command action's whole environment: PATH (to find the program) and what it declares in
 * `envFromEnv`, read once at start-up.
 */
function commandEnvsOf(actions: RunActionSettings['actions'], env: Env): Map<string, Record<string, string>> {
  const path: Record<string, string> = env.PATH === undefined ? {} : { PATH: env.PATH };
  return new Map(
    Object.entries(actions).map(([name, action]) => [
      name,
      {
        ...path,
        ...Object.fromEntries(
          Object.entries(action.envFromEnv).map(([child, host]) => [
            child,
            readSecret(env, host, `tools.run_action.actions.${name}.envFromEnv.${child}`),
          ]),
        ),
      },
    ]),
  );
}

/** Each plan step's secret headers (`plan.http.headersEnv`), read once at start-up. */
function planHeadersOf(actions: RunActionSettings['actions'], env: Env): Map<string, Record<string, string>> {
  return new Map(
    Object.entries(actions).map(([name, action]) => [
      name,
      Object.fromEntries(
        Object.entries(action.plan?.http?.headersEnv ?? {}).map(([header, envName]) => [
          header,
          readSecret(env, envName, `tools.run_action.actions.${name}.plan.http.headersEnv.${header}`),
        ]),
      ),
    ]),
  );
}

/** What an action needs at execution besides its filled template: secret headers or a command's environment. */
interface ActionSecrets {
  headers: Record<string, string>;
  commandEnv: Record<string, string>;
}

async function execute(
  name: string,
  action: ActionSettings,
  planned: Planned,
  secrets: ActionSecrets,
  ctx: ToolContext,
) {
  const timeoutMs = action.timeoutSeconds * 1000;
  if (planned.kind === 'command') {
    const options = { timeoutMs, signal: ctx.signal, env: secrets.commandEnv };
    return { action: name, ...(await runCommand(planned.argv, options)) };
  }
  const url = new URL(planned.url);
  const reply = await exchange({
    method: planned.method,
    url,
    headers: {
      ...secrets.headers,
      'idempotency-key': ctx.idempotencyKey,
      ...(planned.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(planned.body === undefined ? {} : { body: JSON.stringify(planned.body) }),
    limit: timeLimit(ctx.signal, timeoutMs),
    maxBytes: 200_000,
  });
  const contentType = reply.headers['content-type'];
  const text = clip(formatBody(decodeBody(reply.body, contentType), contentType), 2000);
  if (reply.status < 200 || reply.status >= 300)
    throw new HttpStatusError(planned.method, url.href, reply.status, clip(text, 500), {
      retryAfterMs: retryAfterMs(reply.headers),
    });
  return { action: name, status: reply.status, body: text };
}

async function verifyOnce(url: URL, timeoutMs: number, signal: AbortSignal): Promise<string | null> {
  try {
    const reply = await exchange({
      method: 'GET',
      url,
      limit: timeLimit(signal, timeoutMs),
      maxBytes: 100_000,
    });
    return reply.status >= 200 && reply.status < 300 ? null : `HTTP ${reply.status}`;
  } catch (err) {
    if (signal.aborted) throw err;
    return err instanceof Error ? err.message : String(err);
  }
}

async function verify(
  name: string,
  action: ActionSettings,
  params: Record<string, ParamValue>,
  ctx: ToolContext,
): Promise<VerifyResult> {
  const step = action.verify;
  if (!step) return { ok: true, summary: `not verified: action ${name} declares no verify step` };
  const url = new URL(resolvedUrl(step.http_get, params));
  let problem: string | null = null;
  for (let attempt = 1; attempt <= step.attempts; attempt++) {
    if (attempt > 1) await sleep(step.intervalSeconds * 1000, undefined, { signal: ctx.signal });
    problem = await verifyOnce(url, step.timeoutSeconds * 1000, ctx.signal);
    if (problem === null)
      return { ok: true, summary: `GET ${url.href} answered 2xx (attempt ${attempt} of ${step.attempts})` };
  }
  return { ok: false, summary: `GET ${url.href} failed after ${step.attempts} attempt(s): ${problem}` };
}

export function createRunAction(settings: RunActionSettings, deps: { env: Env }): AnyTool {
  const actions = settings.actions;
  const headers = secretHeadersOf(actions, deps.env);
  const commandEnvs = commandEnvsOf(actions, deps.env);
  const lookup = (args: RunActionArgs): ActionSettings => {
    const action = actions[args.action];
    if (!action) throw new ToolError('unknown_action', `no action named ${args.action}`);
    return action;
  };
  const planHeaders = planHeadersOf(actions, deps.env);
  const longest = Math.max(...Object.values(actions).map((a) => a.timeoutSeconds));
  const declaresPlans = Object.values(actions).some((a) => a.plan !== undefined);
  // Only when an action declares a plan step: the others then show that they have none (a stable text).
  const planMethod = {
    async plan(args: RunActionArgs, ctx: ToolContext) {
      const action = lookup(args);
      filled(action, args.params); // the action's own argument rules, before anything runs
      if (!action.plan) return `(action ${args.action} declares no plan step)`;
      const secrets = {
        commandEnv: commandEnvs.get(args.action) ?? {},
        headers: planHeaders.get(args.action) ?? {},
      };
      return runPlanStep(action.plan, args.params, secrets, ctx);
    },
  };
  return defineTool({
    name: 'run_action',
    description: `Run one of the operational actions the operators declared. Actions:\n${describeActions(actions)}`,
    parameters: runActionParameters(actions),
    effect: 'write',
    timeoutMs: longest * 1000 + 1000,
    async preview(args) {
      const action = lookup(args);
      return previewOf(args.action, action, filled(action, args.params), args.params);
    },
    async execute(args, ctx) {
      const action = lookup(args);
      const secrets = {
        headers: headers.get(args.action) ?? {},
        commandEnv: commandEnvs.get(args.action) ?? {},
      };
      return execute(args.action, action, filled(action, args.params), secrets, ctx);
    },
    async verify(args, _result, ctx) {
      return verify(args.action, lookup(args), args.params, ctx);
    },
    ...(declaresPlans ? planMethod : {}),
  });
}
