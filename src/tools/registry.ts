/**
 * Builds the tool registry from the policy: each built-in tool whose key is present under `tools:`, then
 * the custom modules under `custom:`. Secrets are read from the environment here, once; ports the tools
 * need (Slack poster, resolver, clock) are injected. Problems stop start-up with a `ConfigError`.
 */
import { ConfigError, type ConfigProblem } from '../config/errors.js';
import type { Policy } from '../config/policy.js';
import { approversFor, retryFor } from '../config/policy-limits.js';
import { READ_RESULT } from '../loop/read-result.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { createCurrentTime } from './current-time.js';
import type { AnyCustomTool } from './custom/tool-api.js';
import { loadCustomModule, missingSecrets, wrapCustomTool } from './custom-tools.js';
import { createHttpGet } from './http-get.js';
import { createHttpRequest } from './http-request.js';
import { createPageOncall } from './page-oncall.js';
import { systemClock, type ToolDeps } from './ports.js';
import { createPostMessage } from './post-message.js';
import { createPrometheusQuery } from './prometheus-query.js';
import { createReadRunbook } from './read-runbook.js';
import { createRunAction } from './run-action.js';
import { createSearchRunbooks } from './search-runbooks.js';
import { resolveAllowRules } from './settings.js';

function builtIns(policy: Policy, deps: ToolDeps): AnyTool[] {
  const env = deps.env ?? process.env;
  const clock = deps.clock ?? systemClock;
  const t = policy.tools;
  const tools: AnyTool[] = [];
  if (t.http_get)
    tools.push(createHttpGet(t.http_get, { env, ...(deps.lookup ? { lookup: deps.lookup } : {}) }));
  if (t.http_request) {
    tools.push(createHttpRequest(t.http_request, { env, ...(deps.lookup ? { lookup: deps.lookup } : {}) }));
  }
  if (t.search_runbooks)
    tools.push(createSearchRunbooks(t.search_runbooks), createReadRunbook(t.search_runbooks));
  if (t.prometheus_query) tools.push(createPrometheusQuery(t.prometheus_query, { env, clock }));
  if (t.current_time) tools.push(createCurrentTime({ clock }));
  if (t.post_message) {
    if (!deps.slack) {
      throw new ConfigError(policy.source, [
        {
          key: 'tools.post_message',
          problem: 'enabled, but this process was given no Slack poster to post with',
        },
      ]);
    }
    tools.push(createPostMessage(t.post_message, { slack: deps.slack }));
  }
  if (t.page_oncall) tools.push(createPageOncall(t.page_oncall, { env }));
  if (t.run_action) tools.push(createRunAction(t.run_action, { env }));
  return tools;
}

function customProblems(
  policy: Policy,
  tool: AnyCustomTool,
  index: number,
  taken: ReadonlySet<string>,
  env: ToolDeps['env'] & object,
): ConfigProblem[] {
  const key = `custom[${index}]`;
  const problems: ConfigProblem[] = [];
  if (taken.has(tool.name)) problems.push({ key, problem: `a tool named ${tool.name} already exists` });
  if (tool.name === READ_RESULT) {
    problems.push({
      key,
      problem: `${READ_RESULT} is loopgate's own tool for long results: rename this one`,
    });
  }
  for (const name of missingSecrets(tool, env)) {
    problems.push({ key, problem: `${tool.name} needs environment variable ${name}, which is not set` });
  }
  if (tool.effect !== 'read') {
    const { users, groups } = approversFor(policy, tool.name);
    if (users.length + groups.length === 0) {
      problems.push({
        key,
        problem: `${tool.name} (${tool.effect}) has no approvers: set approvals.approvers or its own`,
      });
    }
  }
  return problems;
}

/** `name` of an entry must be one of its module's tools. */
function entryNameProblems(policy: Policy, tools: readonly AnyCustomTool[], index: number): ConfigProblem[] {
  const name = policy.custom[index]?.name;
  if (name === undefined || tools.some((t) => t.name === name)) return [];
  const names = tools.map((t) => t.name).join(', ');
  return [{ key: `custom[${index}].name`, problem: `is ${name} but the module's tools are named ${names}` }];
}

/** The tool with the operator's `retry` settings, when the policy gives it some. */
function withPolicyRetry(policy: Policy, tool: AnyTool): AnyTool {
  const retry = retryFor(policy, tool.name);
  return retry ? { ...tool, retry } : tool;
}

/**
 * The values of the secrets the custom tools declare (`secrets: [...]`), for the log redaction set.
 * Imports the modules (their top-level code runs); a module that cannot load is left to `buildTools`.
 */
export async function customToolSecrets(policy: Policy, env: ToolDeps['env'] & object): Promise<string[]> {
  const values: string[] = [];
  for (const entry of policy.custom) {
    const tools = await loadCustomModule(entry.path).catch(() => []);
    for (const name of tools.flatMap((t) => t.secrets ?? [])) {
      const value = env[name];
      if (value) values.push(value);
    }
  }
  return values;
}

/**
 * Every enabled tool by name.
 * @throws ConfigError when a tool cannot be built (missing Slack poster, vanished secret, bad custom
 * module, a custom tool's declared secret unset).
 */
export async function buildTools(policy: Policy, deps: ToolDeps = {}): Promise<Map<string, AnyTool>> {
  const env = deps.env ?? process.env;
  const tools = new Map<string, AnyTool>();
  for (const tool of builtIns(policy, deps)) tools.set(tool.name, withPolicyRetry(policy, tool));
  const problems: ConfigProblem[] = [];
  for (const [index, entry] of policy.custom.entries()) {
    const loaded = await loadCustomModule(entry.path);
    problems.push(...entryNameProblems(policy, loaded, index));
    const rules = resolveAllowRules(entry.allow, env, `custom[${index}].allow`);
    for (const tool of loaded) {
      const found = customProblems(policy, tool, index, new Set(tools.keys()), env);
      problems.push(...found);
      if (found.length > 0) continue;
      const wrapped = wrapCustomTool(tool, { env, rules, ...(deps.lookup ? { lookup: deps.lookup } : {}) });
      tools.set(tool.name, withPolicyRetry(policy, wrapped));
    }
  }
  if (problems.length > 0) throw new ConfigError(policy.source, problems);
  return tools;
}
