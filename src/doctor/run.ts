/**
 * `loopgate doctor`: the configuration checked against the real workspace, model, MCP servers and
 * Redis, one result per check. Each check reports in its own words and names what to fix; a failing
 * check never stops the others (a team fixes everything in one round).
 */
import { loadEnv } from '../config/env.js';
import { ConfigError } from '../config/errors.js';
import { DEFAULT_MODEL_SECTION, loadPolicy, type Policy } from '../config/policy.js';
import { redisTarget } from '../config/redis-target.js';
import type { AnyTool, Logger } from '../loop/tool-contract.js';
import { memoryCallDefinitions } from '../mcp/call-definitions.js';
import { McpSource } from '../mcp/mcp-source.js';
import { buildTools } from '../tools/registry.js';
import { calendarChecks } from './calendar-checks.js';
import { doctorModelCheck, type ModelCheck } from './model.js';
import { portChecks } from './ports.js';
import { redisChecks } from './redis-check.js';
import { slackCaller } from './slack-api.js';
import { slackChecks } from './slack-checks.js';
import { type CheckResult, fail, ok, skip } from './types.js';

interface DoctorOptions {
  /** The environment, `.env` already filled in. */
  env: Readonly<Record<string, string | undefined>>;
  /** Policy path; default LOOPGATE_CONFIG, else ./loopgate.yaml. */
  policyPath?: string;
  /** The model check; default one request through checkModel (src/doctor/model-check.ts). */
  checkModel?: ModelCheck;
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

/** Tools are built but never run: post_message gets a poster that refuses to post. */
const noPosting = { postMessage: () => Promise.reject(new Error('doctor does not post to Slack')) };

export async function runDoctor(options: DoctorOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  let env: ReturnType<typeof loadEnv<'all'>>;
  try {
    env = loadEnv({ ...options.env }, { need: 'all', envFile: false });
    results.push(ok('environment', 'every required variable is set and valid'));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    results.push(...error.problems.map((p) => fail(`environment ${p.key}`, p.problem)));
    return [...results, skip('everything else', 'not checked: fix the environment first')];
  }

  const path = options.policyPath ?? env.LOOPGATE_CONFIG;
  let policy: Policy | undefined;
  let tools = new Map<string, AnyTool>();
  try {
    policy = await loadPolicy(path, { env: options.env });
    tools = await buildTools(policy, { env: options.env, slack: noPosting });
    results.push(ok('policy', `${path} is valid: ${tools.size} built-in or custom tools`));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    results.push(...error.problems.map((p) => fail(`policy ${p.key}`, p.problem)));
  }

  if (policy) {
    results.push(...(await calendarChecks(policy, options.env)));
    results.push(
      ...(await slackChecks({
        policy,
        slack: slackCaller(env.SLACK_API_URL, env.SLACK_BOT_TOKEN),
        appToken: env.SLACK_APP_TOKEN,
      })),
    );
  } else results.push(skip('slack', 'not checked: fix the policy first'));

  const mcp = policy?.mcp
    ? new McpSource({
        settings: policy.mcp,
        env: options.env,
        logger: quiet,
        definitions: memoryCallDefinitions(),
        reserved: new Set(tools.keys()),
      })
    : undefined;
  try {
    if (mcp) {
      await mcp.start();
      for (const [name, s] of Object.entries(mcp.report())) {
        if (s.state !== 'connected') {
          results.push(fail(`mcp ${name}`, `could not start or connect: ${s.error ?? s.state}`));
          continue;
        }
        const rows = mcp.rows().filter((r) => r.server === name);
        const effects = rows.map((r) =>
          r.decision ? `${r.name} ${r.decision.effect}` : `${r.name} refused`,
        );
        results.push(ok(`mcp ${name}`, `${s.tools} tools listed: ${effects.join(', ') || 'none'}`));
      }
      for (const [name, tool] of mcp.tools()) tools.set(name, tool);
    }
    results.push(
      await (options.checkModel ?? doctorModelCheck)({
        env,
        // A broken policy was reported above; the model is still checked, as a policy without a model section.
        policy: policy ?? { model: DEFAULT_MODEL_SECTION },
        tools,
        timeoutMs: Math.min(env.OPENAI_TIMEOUT_MS, 60_000),
      }),
    );
  } finally {
    await mcp?.close();
  }

  results.push(...(await redisChecks(redisTarget(env))));
  results.push(
    ...(await portChecks([
      ...(env.SLACK_APP_TOKEN === undefined
        ? [{ variable: 'PORT', port: env.PORT, serves: "the bot's /slack/events" }]
        : []),
      { variable: 'BOT_METRICS_PORT', port: env.BOT_METRICS_PORT, serves: "the bot's /metrics and /readyz" },
      { variable: 'METRICS_PORT', port: env.METRICS_PORT, serves: "a worker's /metrics and /readyz" },
    ])),
  );
  return results;
}
