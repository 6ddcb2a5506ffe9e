/**
 * The policy/tools file (path in LOOPGATE_CONFIG): which tools are enabled and how, who approves, budgets,
 * channels. Validated with zod at start-up; every problem is reported at once with the key path and what
 * is expected there. Secrets are referenced by environment variable NAME (keys ending in `Env`) and only
 * their existence is checked here: the parsed `Policy` holds no secret values and may be logged.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { type ApproverEntry, approverList, toolApprovers } from '../approvers/approvers.js';
import { SCHEMA_FORMS } from '../loop/schema-forms.js';
import { mcpApproverProblems, mcpSettings } from '../mcp/settings.js';
import { channelRulesSection } from '../policy/channel-rules.js';
import { freezeProblems, ruleProblems } from '../policy/checks.js';
import { freezesSection } from '../policy/freezes.js';
import { approvalsRuleKeys, rulesSection } from '../policy/rules.js';
import { PACKAGE_NAME, resolvePackage } from '../tools/custom/resolve-package.js';
import { httpGetSettings } from '../tools/http-get.js';
import { httpRequestSettings } from '../tools/http-request.js';
import { pageOncallSettings } from '../tools/page-oncall.js';
import { postMessageSettings } from '../tools/post-message.js';
import { prometheusSettings } from '../tools/prometheus-query.js';
import { runActionSettings } from '../tools/run-action/action-settings.js';
import { runbookSettings } from '../tools/runbooks/runbook-settings.js';
import { type AllowEntrySettings, allowEntry, envVarName, toolMode, toolRetry } from '../tools/settings.js';
import { agentReferenceProblems, agentsSection } from './agents.js';
import { budgetExtendProblems, budgetExtendSection } from './budget-extend.js';
import { ConfigError, type ConfigProblem } from './errors.js';
import { missingSecrets } from './policy-env.js';
import { problemsOf } from './policy-problems.js';

const price = z.strictObject({
  input_per_mtok: z.number({ error: 'expected US dollars per million input tokens' }).min(0),
  output_per_mtok: z.number({ error: 'expected US dollars per million output tokens' }).min(0),
  /** Input tokens the server read from its prompt cache; default `input_per_mtok`. */
  cached_input_per_mtok: z
    .number({ error: 'expected US dollars per million cached input tokens' })
    .min(0)
    .optional(),
});

/** The design's short form `prices: { input_per_mtok, output_per_mtok }` is the price of `model.name`. */
function expandShortPrices(model: unknown, ctx: z.core.$RefinementCtx): unknown {
  if (model === null || typeof model !== 'object' || !('prices' in model)) return model;
  const { prices, name } = model as { prices: unknown; name?: unknown };
  if (prices === null || typeof prices !== 'object') return model;
  if (!('input_per_mtok' in prices) && !('output_per_mtok' in prices)) return model;
  if (typeof name === 'string' && name !== '') return { ...model, prices: { [name]: prices } };
  ctx.addIssue({
    code: 'custom',
    path: ['name'],
    message:
      'required when prices is one { input_per_mtok, output_per_mtok } (it is the price of this model)',
  });
  return { ...model, prices: {} };
}

/** A model's context window in tokens (src/config/model-windows.ts has the defaults). */
const contextTokens = z
  .number({ error: 'expected a number of tokens' })
  .int({ error: 'expected a whole number of tokens' })
  .min(1_000, { error: 'expected at least 1000 tokens' })
  .max(100_000_000, { error: 'expected at most 100000000 tokens' });

const modelSection = z.preprocess(
  expandShortPrices,
  z.strictObject({
    /** Model to use; when absent the environment's OPENAI_MODEL decides. */
    name: z.string().min(1).optional(),
    /** Tokens one request may use; default the model's known window, else 128,000. */
    contextTokens: contextTokens.optional(),
    /** Compact the history when a request's estimated input passes this percentage of the window. */
    compactAtPercent: z
      .number({ error: 'expected a percentage' })
      .int({ error: 'expected a whole percentage' })
      .min(10, { error: 'expected at least 10' })
      .max(95, { error: 'expected at most 95' })
      .default(70),
    prices: z.record(z.string().min(1), price).default({}),
    /**
     * The form tools' schemas are offered in (src/loop/schema-forms.ts): `standard` as zod makes them,
     * `strict` for OpenAI's strict mode, `lenient` without length, pattern and format limits (for
     * grammar-constrained servers such as llama.cpp). A server refusing the schemas gets `lenient`
     * automatically. Arguments are always validated against the full schema.
     */
    schemas: z
      .enum(SCHEMA_FORMS, { error: `expected one of ${SCHEMA_FORMS.join(', ')}` })
      .default('standard'),
    /** Sent as `parallel_tool_calls`; false for servers or models that mishandle several calls at once. */
    parallelToolCalls: z.boolean({ error: 'expected true or false' }).default(true),
    /** Price of a model missing from `prices`; default the most expensive listed one. */
    defaultPrice: price.optional(),
    /**
     * Models asked in order when the one before keeps failing (after its retries): another model on the
     * same server, or any OpenAI-compatible endpoint with its own key.
     */
    fallbacks: z
      .array(
        z.strictObject({
          name: z.string().min(1, { error: 'expected a model name' }),
          /** Default: the primary's server (OPENAI_BASE_URL). */
          baseUrl: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).optional(),
          /** Environment variable holding this endpoint's API key; default OPENAI_API_KEY. */
          apiKeyEnv: envVarName.optional(),
          /** This model's window; default its known window, else 128,000. */
          contextTokens: contextTokens.optional(),
        }),
      )
      .max(5, { error: 'expected at most 5 fallbacks' })
      .default([]),
  }),
);

const positiveInt = (max: number) =>
  z
    .number({ error: 'expected a whole number' })
    .int({ error: 'expected a whole number' })
    .min(1, { error: 'expected at least 1' })
    .max(max, { error: `expected at most ${max}` });

const budgetsSection = z.strictObject({
  maxSteps: positiveInt(500).optional(),
  deadlineSeconds: positiveInt(86_400).optional(),
  maxTokens: positiveInt(100_000_000).optional(),
  maxReplyTokens: positiveInt(1_000_000).optional(),
  maxCostUsd: z
    .number({ error: 'expected US dollars' })
    .positive({ error: 'expected more than 0' })
    .max(10_000)
    .optional(),
  maxConsecutiveToolErrors: positiveInt(100).optional(),
  maxToolCallsPerReply: positiveInt(128).optional(),
  maxGatedCallsPerPause: positiveInt(50).optional(),
  maxObservationChars: z.number().int().min(500).max(1_000_000).optional(),
  /** Bytes of one long result kept for read_result (its start, when longer); 0 keeps none. */
  maxStoredResultBytes: z.number().int().min(0).max(100_000_000).optional(),
  /** Bytes of long results kept per run. */
  maxStoredBytesPerRun: z.number().int().min(0).max(1_000_000_000).optional(),
  toolTimeoutSeconds: positiveInt(3600).optional(),
  /** Levels of sub-agents below a person's run (default 2). */
  maxAgentDepth: positiveInt(5).optional(),
  /** Sub-agent calls of one reply started at once (default 4). */
  maxParallelAgents: positiveInt(16).optional(),
  /** More budget as a decision: a run that uses a budget up asks a person (src/config/budget-extend.ts). */
  extend: budgetExtendSection.optional(),
});

const approvalsSection = z.strictObject({
  approvers: approverList.default([]),
  /** May the person who asked approve their own run's calls? */
  selfApproval: z.boolean({ error: 'expected true or false' }).default(false),
  expiresAfterMinutes: positiveInt(10_080).default(60),
  /** `shadow`: no gated call runs; cards ask what people would decide (a tool's own `mode` wins). */
  mode: toolMode.default('enforce'),
  /** How long who is on call (PagerDuty, Opsgenie) is trusted before it is asked again; shared in Redis. */
  oncallCacheSeconds: z
    .number({ error: 'expected seconds' })
    .int({ error: 'expected whole seconds' })
    .min(5, { error: 'expected at least 5 seconds' })
    .max(900, { error: 'expected at most 900 seconds (15 minutes): on-call changes must show soon' })
    .default(60),
  /** Reminders, escalation and trusted tools (src/policy/rules.ts). */
  ...approvalsRuleKeys,
});

const channelId = z
  .string()
  .regex(/^[CGD][A-Z0-9]{2,}$/, { error: 'expected a Slack channel id (C…, G… or D…)' });

const channelsSection = z.strictObject({
  /** Channels where the bot answers; empty: wherever it is invited. */
  allow: z.array(channelId).default([]),
  /** Extra system-prompt text per channel id. */
  prompt: z.record(channelId, z.string().max(4000)).default({}),
  /** Runs asked from these channels are in shadow mode whatever the tools' modes say. */
  shadow: z.array(channelId).default([]),
  /** Per-channel permissions: tools offered, read-only tools, approvers (src/policy/channel-rules.ts). */
  rules: channelRulesSection,
});

/** Bounds on what people send, so one person or one thread cannot flood the model or the queue. */
const inboundSection = z.strictObject({
  /** Longest question taken, in characters; longer ones are refused with a reply. */
  maxQuestionChars: z.number().int().min(100).max(100_000).default(4_000),
  /** Messages one person may send loopgate per minute. */
  perUserPerMinute: positiveInt(10_000).default(10),
  /** Messages loopgate takes per thread per minute. */
  perThreadPerMinute: positiveInt(10_000).default(20),
  /** Messages waiting in a thread behind its working run; more are refused with a reply. */
  maxQueuedPerThread: positiveInt(1_000).default(10),
});

/** One suggested prompt of the agent pane: the button's title and the message it sends. */
const suggestedPrompt = z.strictObject({
  title: z.string().trim().min(1).max(100),
  message: z.string().trim().min(1).max(2_000),
});

/**
 * Slack's rate limits loopgate budgets for, shared by all its processes (src/slack/rate). Slack's
 * documented ones by default; raise them when Slack granted the app more.
 */
const rateLimitsSection = z.strictObject({
  tier2PerMinute: positiveInt(10_000).default(20),
  tier3PerMinute: positiveInt(10_000).default(50),
  tier4PerMinute: positiveInt(10_000).default(100),
  postsPerMinutePerChannel: positiveInt(10_000).default(60),
});

/** Slack surfaces. */
const slackSection = z.strictObject({
  /** The Slack rate budgets in force (docs/operations.md, "Slack rate limits"). */
  rateLimits: rateLimitsSection.default(() => rateLimitsSection.parse({})),
  /**
   * Prompts offered when someone opens a new thread in loopgate's agent pane (at most 4 each, Slack's
   * limit): `channel` while they look at a channel, `dm` otherwise. Empty lists: none are offered.
   */
  suggestedPrompts: z
    .strictObject({
      /** Shown above the prompts; Slack's default when absent. */
      title: z.string().trim().min(1).max(150).optional(),
      dm: z.array(suggestedPrompt).max(4).default([]),
      channel: z.array(suggestedPrompt).max(4).default([]),
    })
    .default({ dm: [], channel: [] }),
});

/** A tool with no settings is enabled by its key alone (`current_time:` or `current_time: {}`). */
const noSettings = z.preprocess((v) => v ?? {}, z.strictObject({}));

const toolsSection = z.strictObject({
  http_get: httpGetSettings.optional(),
  http_request: httpRequestSettings.optional(),
  search_runbooks: runbookSettings.optional(),
  prometheus_query: prometheusSettings.optional(),
  current_time: noSettings.optional(),
  post_message: postMessageSettings.optional(),
  page_oncall: pageOncallSettings.optional(),
  run_action: runActionSettings.optional(),
});

/** Built-in tool keys of `tools:`; `search_runbooks` enables `read_runbook` too. */
const TOOL_KEYS = Object.keys(toolsSection.shape) as Array<keyof typeof toolsSection.shape>;

/** A `custom:` string names a file when it looks like one (`./x.ts`, `/a/x.js`, `x.mjs`), else a package. */
const looksLikePath = (text: string) =>
  text.startsWith('.') || text.startsWith('/') || /\.[cm]?[jt]s$/.test(text) || !PACKAGE_NAME.test(text);

/**
 * `./tools/x.ts` or `@acme/loopgate-tools`, or `{ path | package, name, approvers, retry, allow }`: `name`
 * gives that tool of the module its own approvers and retry (it must be one of the module's tools, checked
 * when the tools are built); `allow` is the URL allowlist of the module's `ctx.http`, as `http_get`'s.
 */
const customEntry = z.union([
  z
    .string()
    .min(1)
    .transform((text) => ({
      path: looksLikePath(text) ? text : '',
      package: looksLikePath(text) ? undefined : (text as string | undefined),
      name: undefined as string | undefined,
      approvers: undefined as ApproverEntry[] | undefined,
      retry: undefined as z.output<typeof toolRetry> | undefined,
      allow: [] as AllowEntrySettings[],
      mode: undefined as z.output<typeof toolMode> | undefined,
    })),
  z
    .strictObject({
      path: z.string().min(1).optional(),
      package: z.string().regex(PACKAGE_NAME, { error: 'expected an npm package name' }).optional(),
      name: z.string().min(1).optional(),
      approvers: toolApprovers.optional(),
      retry: toolRetry.optional(),
      allow: z.array(allowEntry, { error: 'expected a list of http(s) URL prefixes' }).default([]),
      /** `shadow`: the tool's gated calls never run (docs/approvals.md, "Shadow mode"). */
      mode: toolMode.optional(),
    })
    .refine((entry) => (entry.path === undefined) !== (entry.package === undefined), {
      error: 'give either path (a module file) or package (an installed package), not both',
      path: ['path'],
    })
    .refine((entry) => entry.approvers === undefined || entry.name !== undefined, {
      error: 'approvers of a custom tool need its name (name: <tool name>)',
      path: ['name'],
    })
    .refine((entry) => entry.mode === undefined || entry.name !== undefined, {
      error: 'mode of a custom tool needs its name (name: <tool name>)',
      path: ['name'],
    })
    .transform(({ path, ...entry }) => ({ ...entry, path: path ?? '' })),
]);

/** The model section of a policy that has none (also what `doctor` assumes when the policy is broken). */
export const DEFAULT_MODEL_SECTION: z.output<typeof modelSection> = {
  prices: {},
  fallbacks: [],
  compactAtPercent: 70,
  schemas: 'standard',
  parallelToolCalls: true,
};

const policySchema = z.strictObject({
  model: modelSection.default(DEFAULT_MODEL_SECTION),
  budgets: budgetsSection.default({}),
  approvals: approvalsSection.default(() => approvalsSection.parse({})),
  channels: channelsSection.default({ allow: [], prompt: {}, shadow: [], rules: [] }),
  inbound: inboundSection.default(() => inboundSection.parse({})),
  /** Slack surfaces: the agent pane's suggested prompts. */
  slack: slackSection.default(() => slackSection.parse({})),
  tools: toolsSection.default({}),
  /** Modules exporting tools: paths relative to the policy file, or package names (src/tools/custom). */
  custom: z.array(customEntry).default([]),
  /** MCP servers whose tools are offered as `<server>__<tool>` (src/mcp). */
  mcp: mcpSettings.optional(),
  /** Change freezes by name: one-off and weekly windows that rules can name (src/policy/freezes.ts). */
  freezes: freezesSection.default({}),
  /** Per gated tool, ordered rules on its arguments: allow, deny or ask whom (src/policy). */
  rules: rulesSection.default({}),
  /** Sub-agents, each offered to the model as `ask_<name>` (src/agents). */
  agents: agentsSection,
});

type ParsedPolicy = z.output<typeof policySchema>;

/** The validated policy. Relative paths (runbook directory, custom tools) are already absolute. */
export type Policy = ParsedPolicy & {
  /** Where it came from (the file path), for messages. */
  source: string;
};

const GATED: ReadonlyArray<{
  key: 'http_request' | 'run_action' | 'post_message' | 'page_oncall';
  effect: string;
}> = [
  { key: 'http_request', effect: 'write' },
  { key: 'run_action', effect: 'write' },
  { key: 'post_message', effect: 'notify' },
  { key: 'page_oncall', effect: 'notify' },
];

/**
 * The write and notify tools this policy enables: built-in ones by name, and for each MCP server that may
 * serve writes `<server>__` (whose approvers are the server's) plus each tool given its own approvers.
 */
export const enabledGatedTools = (policy: Pick<Policy, 'tools' | 'mcp'>): string[] => [
  ...GATED.filter(({ key }) => policy.tools[key] !== undefined).map(({ key }) => key),
  ...Object.entries(policy.mcp?.servers ?? {}).flatMap(([name, server]) => [
    ...(server.effect === 'read' ? [] : [`${name}__`]),
    ...Object.entries(server.tools)
      .filter(([, o]) => o.approvers !== undefined && o.effect !== 'read')
      .map(([tool]) => `${name}__${tool}`),
  ]),
];

/** Rules across sections, checked once each section is valid on its own. */
function crossChecks(policy: ParsedPolicy): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (
    policy.budgets.maxCostUsd !== undefined &&
    Object.keys(policy.model.prices).length === 0 &&
    !policy.model.defaultPrice
  ) {
    problems.push({
      key: 'budgets.maxCostUsd',
      problem: 'needs model.prices (or model.defaultPrice) to compute what a run costs',
    });
  }
  if (policy.approvals.approvers.length === 0) {
    for (const { key, effect } of GATED) {
      const settings = policy.tools[key];
      if (settings && settings.approvers === undefined) {
        problems.push({
          key: 'approvals.approvers',
          problem: `required: ${key} (${effect}) is enabled and has no approvers of its own (tools.${key}.approvers)`,
        });
      }
    }
  }
  problems.push(...mcpApproverProblems(policy.mcp, policy.approvals.approvers));
  problems.push(...budgetExtendProblems(policy.budgets.extend, policy.approvals.approvers));
  problems.push(
    ...ruleProblems({
      rules: policy.rules,
      trusted: policy.approvals.trusted,
      gatedBuiltIns: GATED.filter(({ key }) => policy.tools[key] !== undefined).map(({ key }) => key),
      readBuiltIns: [...TOOL_KEYS.filter((key) => !GATED.some((g) => g.key === key)), 'read_runbook'],
      approvals: policy.approvals,
      customNames: policy.custom.flatMap((entry) => (entry.name ? [entry.name] : [])),
      mcp: policy.mcp,
    }),
  );
  problems.push(...freezeProblems(policy.rules, Object.keys(policy.freezes)));
  const { escalateAfterMinutes, expiresAfterMinutes } = policy.approvals;
  if (escalateAfterMinutes !== undefined && escalateAfterMinutes >= expiresAfterMinutes) {
    problems.push({
      key: 'approvals.escalateAfterMinutes',
      problem: `must be less than approvals.expiresAfterMinutes (${expiresAfterMinutes}), or approvals expire first`,
    });
  }
  if ((escalateAfterMinutes === undefined) !== (policy.approvals.escalateTo === undefined)) {
    problems.push({
      key: escalateAfterMinutes === undefined ? 'approvals.escalateAfterMinutes' : 'approvals.escalateTo',
      problem: 'escalateTo and escalateAfterMinutes go together',
    });
  }
  problems.push(...agentReferenceProblems(policy.agents));
  if (policy.channels.allow.length > 0) {
    for (const channel of Object.keys(policy.channels.prompt)) {
      if (!policy.channels.allow.includes(channel)) {
        problems.push({
          key: `channels.prompt.${channel}`,
          problem: 'this channel is not in channels.allow',
        });
      }
    }
  }
  return problems;
}

function absolutePaths(policy: ParsedPolicy, baseDir: string): ParsedPolicy {
  const at = (path: string) => (isAbsolute(path) ? path : resolve(baseDir, path));
  const runbooks = policy.tools.search_runbooks;
  return {
    ...policy,
    tools: {
      ...policy.tools,
      ...(runbooks ? { search_runbooks: { ...runbooks, dir: at(runbooks.dir) } } : {}),
    },
    custom: policy.custom.map((entry) => ({
      ...entry,
      path: entry.package ? (resolvePackage(entry.package, baseDir) ?? '') : at(entry.path),
    })),
    ...(policy.mcp ? { mcp: { ...policy.mcp, servers: mcpPaths(policy.mcp.servers, at) } } : {}),
  };
}

/** A stdio server's working directory, and a program given by a relative path, are relative to the file. */
function mcpPaths(
  servers: NonNullable<ParsedPolicy['mcp']>['servers'],
  at: (path: string) => string,
): NonNullable<ParsedPolicy['mcp']>['servers'] {
  return Object.fromEntries(
    Object.entries(servers).map(([name, s]) => {
      const [program, ...rest] = s.command ?? [];
      const command =
        program === undefined ? undefined : [program.includes('/') ? at(program) : program, ...rest];
      return [name, { ...s, ...(command ? { command } : {}), ...(s.cwd ? { cwd: at(s.cwd) } : {}) }];
    }),
  );
}

function yamlProblems(text: string): { data: unknown; problems: ConfigProblem[] } {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      data: undefined,
      problems: doc.errors.map((e) => {
        const at = e.linePos?.[0];
        return {
          key: at ? `line ${at.line}, column ${at.col}` : '(yaml)',
          problem: e.message.split('\n')[0] ?? e.message,
        };
      }),
    };
  }
  return { data: doc.toJS() ?? {}, problems: [] };
}

interface ParsePolicyOptions {
  /** Where secrets named by the policy must exist; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Directory that relative paths are resolved against; default the working directory. */
  baseDir?: string;
  /** Named in error messages; default `policy`. */
  source?: string;
}

/**
 * Validates policy YAML text.
 * @throws ConfigError listing every problem: key path and what is expected there.
 */
export function parsePolicy(yamlText: string, options: ParsePolicyOptions = {}): Policy {
  const source = options.source ?? 'policy';
  const { data, problems: syntax } = yamlProblems(yamlText);
  if (syntax.length > 0) throw new ConfigError(source, syntax);
  const parsed = policySchema.safeParse(data, { reportInput: true });
  const problems = parsed.success
    ? crossChecks(parsed.data)
    : problemsOf(parsed.error.issues, {
        knownKeys: { '(top level)': Object.keys(policySchema.shape), tools: TOOL_KEYS },
      });
  const env = options.env ?? process.env;
  const secrets = missingSecrets(data, env);
  problems.push(...secrets);
  // Defaults name variables too (an on-call source's tokenEnv): report those the file did not name.
  const named = new Set(secrets.map((p) => p.problem));
  if (parsed.success) problems.push(...missingSecrets(parsed.data, env).filter((p) => !named.has(p.problem)));
  if (!parsed.success || problems.length > 0) throw new ConfigError(source, problems);
  return { ...absolutePaths(parsed.data, options.baseDir ?? process.cwd()), source };
}

async function fileProblems(policy: Policy): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  const runbooks = policy.tools.search_runbooks;
  if (runbooks && !(await stat(runbooks.dir).catch(() => undefined))?.isDirectory()) {
    problems.push({ key: 'tools.search_runbooks.dir', problem: `no directory at ${runbooks.dir}` });
  }
  for (const [i, entry] of policy.custom.entries()) {
    if (entry.package && entry.path === '') {
      problems.push({
        key: `custom[${i}]`,
        problem: `package ${entry.package} is not installed in a node_modules folder above ${dirname(policy.source)}`,
      });
    } else if (!(await stat(entry.path).catch(() => undefined))?.isFile()) {
      problems.push({ key: `custom[${i}]`, problem: `no file at ${entry.path}` });
    }
  }
  return problems;
}

/**
 * Reads and validates the policy file; relative paths in it are resolved against its directory, and the
 * runbook directory and custom tool files must exist.
 * @throws ConfigError naming the file and every problem in it.
 */
export async function loadPolicy(
  path: string,
  options: Omit<ParsePolicyOptions, 'baseDir' | 'source'> = {},
): Promise<Policy> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(path, [
      {
        key: 'LOOPGATE_CONFIG',
        problem: `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      },
    ]);
  }
  const policy = parsePolicy(text, { ...options, baseDir: dirname(resolve(path)), source: path });
  const problems = await fileProblems(policy);
  if (problems.length > 0) throw new ConfigError(path, problems);
  return policy;
}
