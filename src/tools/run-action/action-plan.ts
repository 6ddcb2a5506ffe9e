/**
 * Runs an action's `plan` step (action-settings.ts): the read-only dry-run command or request whose
 * output is the plan of one call. The whole output is the plan (never a tail: a change past a cut would
 * go unseen); one longer than the engine shows is refused, so the call is blocked rather than approved
 * on a part of its plan.
 */
import { execFile } from 'node:child_process';
import { MAX_PLAN_CHARS } from '../../loop/plan.js';
import type { ToolContext } from '../../loop/tool-contract.js';
import { HttpStatusError, ToolError } from '../errors.js';
import { decodeBody } from '../net/body-format.js';
import { exchange } from '../net/http-client.js';
import { timeLimit } from '../net/time-limit.js';
import type { PlanStep } from './action-settings.js';
import { fill, fillJson, fillUrl, type ParamValue } from './placeholders.js';

/** What a plan step needs besides its template: the action's command environment, the plan's headers. */
interface PlanSecrets {
  commandEnv: Record<string, string>;
  headers: Record<string, string>;
}

function runPlanCommand(
  argv: readonly string[],
  step: PlanStep,
  env: Record<string, string>,
  signal: AbortSignal,
): Promise<string> {
  const [program, ...args] = argv;
  if (program === undefined) return Promise.reject(new ToolError('plan_failed', 'empty plan command'));
  const timeoutMs = step.timeoutSeconds * 1000;
  return new Promise((resolve, reject) => {
    execFile(
      program,
      args,
      { timeout: timeoutMs, maxBuffer: MAX_PLAN_CHARS * 4, signal, env, shell: false, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? error.code : 0;
        if (typeof code === 'number' && step.exitCodes.includes(code) && !error?.killed) {
          resolve(stdout);
          return;
        }
        if (signal.aborted) reject(signal.reason);
        else if (error?.killed)
          reject(new ToolError('plan_failed', `${program} did not finish within ${timeoutMs} ms`));
        else if (code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER')
          reject(new ToolError('plan_failed', `${program} printed more than a plan can hold`));
        else {
          const detail = (stderr || stdout).trim().slice(-500);
          reject(
            new ToolError('plan_failed', `${program} exited with ${code}${detail ? `: ${detail}` : ''}`),
          );
        }
      },
    );
  });
}

async function requestPlan(
  http: NonNullable<PlanStep['http']>,
  step: PlanStep,
  params: Record<string, ParamValue>,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<string> {
  const url = new URL(fillUrl(http.url, params));
  const body = http.body === undefined ? undefined : JSON.stringify(fillJson(http.body, params));
  const reply = await exchange({
    method: http.method,
    url,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body }),
    limit: timeLimit(signal, step.timeoutSeconds * 1000),
    maxBytes: MAX_PLAN_CHARS * 4,
  });
  const text = decodeBody(reply.body, reply.headers['content-type']);
  if (reply.status < 200 || reply.status >= 300)
    throw new HttpStatusError(http.method, url.href, reply.status, text.slice(0, 500));
  return text;
}

/** The plan of one call of the action: the output of its plan step, filled with the call's parameters. */
export function runPlanStep(
  step: PlanStep,
  params: Record<string, ParamValue>,
  secrets: PlanSecrets,
  ctx: ToolContext,
): Promise<string> {
  if (step.command) {
    const argv = step.command.map((arg) => fill(arg, params));
    return runPlanCommand(argv, step, secrets.commandEnv, ctx.signal);
  }
  if (!step.http) throw new ToolError('action_misconfigured', 'plan has neither http nor command');
  return requestPlan(step.http, step, params, secrets.headers, ctx.signal);
}
