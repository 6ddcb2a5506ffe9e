/**
 * The process environment, read once at start-up: `.env` (if present) fills in what the real environment
 * leaves unset, zod validates, and every bad or missing key is reported at once in a `ConfigError`.
 */
import { config as loadDotenvFile } from 'dotenv';
import { z } from 'zod';
import { OTLP_PROTOCOL_EXPECTED, OTLP_PROTOCOLS } from '../telemetry/settings.js';
import { ConfigError } from './errors.js';
import { parseSeedNodes, redisVarProblems } from './redis-target.js';

/** One variable: its schema, what a valid value looks like (quoted in errors), and whether it is a secret. */
interface VarSpec<S extends z.ZodType> {
  schema: S;
  expected: string;
  /** Secrets' values are never echoed back in error messages. */
  secret?: true;
}

const spec = <S extends z.ZodType>(s: VarSpec<S>): VarSpec<S> => s;

/** Digits only, so `1e3`, `0x10` or ` 12` are refused instead of silently coerced. */
const integer = (min: number, max: number) =>
  z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(min).max(max));

/** Slack's own Web API, the default of SLACK_API_URL (tests point it at a fake server). */
export const SLACK_WEB_API = 'https://slack.com/api/';

/**
 * A non-empty {hash tag} (Redis Cluster hashes only the part of a key between its first `{` and the next
 * `}`), and no ':' (BullMQ joins its key parts with ':').
 */
const HASH_TAG = /^[^{:]*\{[^}:]+\}[^:]*$/;

/** `z.httpUrl()` would refuse IP hosts such as the 127.0.0.1 fake servers of tests. */
const HTTP = /^https?$/;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const VARS = {
  SLACK_BOT_TOKEN: spec({
    schema: z.string().startsWith('xoxb-').optional(),
    expected: 'a bot token starting with xoxb-',
    secret: true,
  }),
  SLACK_SIGNING_SECRET: spec({
    schema: z.string().min(1).optional(),
    expected: "the Slack app's signing secret",
    secret: true,
  }),
  SLACK_APP_TOKEN: spec({
    schema: z.string().startsWith('xapp-').optional(),
    expected: 'optional; an app-level token starting with xapp-, which turns on Socket Mode',
    secret: true,
  }),
  SLACK_API_URL: spec({
    // Ends with `/` so that method names resolve below it rather than replacing its last segment.
    schema: z
      .url({ protocol: HTTP })
      .default(SLACK_WEB_API)
      .transform((url) => (url.endsWith('/') ? url : `${url}/`)),
    expected: `an http(s) URL of the Slack Web API, default ${SLACK_WEB_API}`,
  }),
  OPENAI_API_KEY: spec({
    schema: z.string().min(1).optional(),
    expected: 'the API key of the OpenAI-compatible server',
    secret: true,
  }),
  OPENAI_BASE_URL: spec({
    schema: z.url({ protocol: HTTP }).optional(),
    expected: 'optional; an http(s) URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1',
  }),
  OPENAI_MODEL: spec({
    schema: z.string().min(1).default('gpt-4.1-mini'),
    expected: 'a model name, default gpt-4.1-mini',
  }),
  REDIS_URL: spec({
    schema: z.url({ protocol: /^rediss?$/ }).default('redis://127.0.0.1:6379'),
    expected: 'a redis:// or rediss:// URL, default redis://127.0.0.1:6379',
  }),
  REDIS_CLUSTER_NODES: spec({
    schema: z
      .string()
      .transform((text, ctx) => {
        const nodes = parseSeedNodes(text);
        if (nodes === null) ctx.addIssue({ code: 'custom', message: 'not host:port,host:port' });
        return nodes ?? z.NEVER;
      })
      .optional(),
    expected:
      'optional; seed nodes of a Redis Cluster as host:port,host:port (e.g. 10.0.0.1:6379,10.0.0.2:6379), without a scheme',
  }),
  REDIS_TLS: spec({
    schema: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .optional(),
    expected: 'optional; true or false: TLS to every node of REDIS_CLUSTER_NODES',
  }),
  REDIS_USERNAME: spec({
    schema: z.string().min(1).optional(),
    expected: 'optional; the Redis ACL user name',
  }),
  REDIS_PASSWORD: spec({
    schema: z.string().min(1).optional(),
    expected: 'optional; the Redis password (of REDIS_USERNAME, else of the default user)',
    secret: true,
  }),
  PORT: spec({
    schema: integer(1, 65535).default(3000),
    expected: 'an integer from 1 to 65535, default 3000',
  }),
  LOOPGATE_CONFIG: spec({
    schema: z.string().min(1).default('./loopgate.yaml'),
    expected: 'the path of the YAML policy/tools file, default ./loopgate.yaml',
  }),
  LOOPGATE_PREFIX: spec({
    schema: z.string().regex(HASH_TAG).default('{loopgate}'),
    expected: 'a Redis key prefix containing a non-empty {hash tag} such as {loopgate}, without ":"',
  }),
  LOG_LEVEL: spec({
    schema: z.enum(LOG_LEVELS).default('info'),
    expected: `one of ${LOG_LEVELS.join(', ')}; default info`,
  }),
  SLACK_AGENT_SURFACES: spec({
    schema: z.enum(['auto', 'off']).default('auto'),
    expected:
      'auto (agent sessions, streamed answers and the step timeline where the workspace allows them, else the placeholder message) or off (always the placeholder); default auto',
  }),
  OPENAI_MAX_RETRIES: spec({
    schema: integer(0, 20).default(4),
    expected: 'an integer from 0 to 20, default 4',
  }),
  OPENAI_TIMEOUT_MS: spec({
    schema: integer(1, 3_600_000).default(60_000),
    expected: 'milliseconds, an integer from 1 to 3600000, default 60000',
  }),
  WORKER_CONCURRENCY: spec({
    schema: integer(1, 5000).default(500),
    expected: 'an integer from 1 to 5000, default 500',
  }),
  WORKER_MAX_EVENT_LOOP_DELAY_MS: spec({
    schema: integer(5, 10_000).default(100),
    expected: 'milliseconds, an integer from 5 to 10000, default 100',
  }),
  WORKER_MAX_HEAP_PERCENT: spec({
    schema: integer(10, 95).default(80),
    expected: 'a percentage of the V8 heap limit, an integer from 10 to 95, default 80',
  }),
  WORKER_MAX_RUNS_PER_REQUESTER: spec({
    schema: integer(1, 5000).default(5),
    expected: 'an integer from 1 to 5000, default 5',
  }),
  METRICS_PORT: spec({
    schema: integer(0, 65_535).default(9091),
    expected: "a TCP port for the worker's /metrics, /healthz and /readyz, 0 to serve none; default 9091",
  }),
  BOT_METRICS_PORT: spec({
    schema: integer(0, 65_535).default(9092),
    expected:
      "a TCP port for the bot's internal /metrics, /healthz and /readyz (not the public PORT), 0 to serve none; default 9092",
  }),
  WORKER_LOCK_MS: spec({
    schema: integer(1_000, 600_000).default(20_000),
    expected: 'milliseconds, an integer from 1000 to 600000, default 20000',
  }),
  RETENTION_DAYS: spec({
    schema: integer(1, 3650).default(7),
    expected: 'days, an integer from 1 to 3650, default 7',
  }),
  REDIS_WAIT_REPLICAS: spec({
    schema: integer(0, 16).default(0),
    expected:
      'replicas that must confirm an execution or decision record before it counts (Redis WAIT), an integer from 0 to 16, 0 for off; default 0',
  }),
  REDIS_WAIT_TIMEOUT_MS: spec({
    // WAIT's timeout 0 blocks forever. The bound keeps a Reject form's answer, which waits for the
    // decision, inside Slack's 3 s.
    schema: integer(1, 2_000).default(500),
    expected: 'milliseconds WAIT may block for REDIS_WAIT_REPLICAS, an integer from 1 to 2000, default 500',
  }),
  // OpenTelemetry's own variables (src/telemetry): checked here so a typo fails at start-up by name.
  OTEL_EXPORTER_OTLP_ENDPOINT: spec({
    schema: z.url({ protocol: HTTP }).optional(),
    expected:
      'optional; the OTLP/HTTP base URL traces are sent to (e.g. http://otel-collector:4318); unset: no traces',
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: spec({
    schema: z.url({ protocol: HTTP }).optional(),
    expected: 'optional; the full OTLP/HTTP traces URL (e.g. http://otel-collector:4318/v1/traces)',
  }),
  OTEL_EXPORTER_OTLP_PROTOCOL: spec({
    schema: z.enum(OTLP_PROTOCOLS).optional(),
    expected: `optional; the OTLP transport of traces, ${OTLP_PROTOCOL_EXPECTED}`,
  }),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: spec({
    schema: z.enum(OTLP_PROTOCOLS).optional(),
    expected: `optional; the transport of traces, overriding OTEL_EXPORTER_OTLP_PROTOCOL: ${OTLP_PROTOCOL_EXPECTED}`,
  }),
  OTEL_EXPORTER_OTLP_HEADERS: spec({
    schema: z.string().optional(),
    expected: 'optional; headers of the OTLP requests, key=value pairs separated by commas',
    secret: true,
  }),
  OTEL_SERVICE_NAME: spec({
    schema: z.string().min(1).optional(),
    expected: 'optional; service.name of the spans, default loopgate-bot, loopgate-worker or loopgate',
  }),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: spec({
    schema: z.enum(['true', 'false']).default('false'),
    expected: 'true or false (default): record message contents (question, tool arguments, answer) in spans',
  }),
} as const;

type VarName = keyof typeof VARS;
/** Every variable loopgate reads, in the order errors list them (docs are checked against it). */
export const ENV_VAR_NAMES = Object.keys(VARS) as readonly VarName[];

/** The variables whose values are secrets (tokens, keys): never echoed, redacted wherever they appear. */
export const SECRET_VAR_NAMES = ENV_VAR_NAMES.filter((name) => 'secret' in VARS[name]);

const envSchema = z.object(
  Object.fromEntries(ENV_VAR_NAMES.map((name) => [name, VARS[name].schema])) as {
    [K in VarName]: (typeof VARS)[K]['schema'];
  },
);

/** Which process is starting; each needs only the secrets it uses. */
export type Need = 'bot' | 'worker' | 'all';

/** The worker never verifies Slack requests; the bot never calls the model. */
const NEEDED = {
  bot: ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET'],
  worker: ['SLACK_BOT_TOKEN', 'OPENAI_API_KEY'],
  all: ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'OPENAI_API_KEY'],
} as const satisfies Record<Need, readonly VarName[]>;

type AnyEnv = z.output<typeof envSchema>;

/** The validated environment; the secrets that `N` needs are guaranteed present. */
export type Env<N extends Need = 'all'> = AnyEnv & {
  [K in (typeof NEEDED)[N][number]]-?: NonNullable<AnyEnv[K]>;
};

interface LoadEnvOptions<N extends Need> {
  /** Default `all`. */
  need?: N;
  /**
   * Path of the dotenv file, default `.env` in the working directory; a missing file is fine. `false`
   * reads no file.
   */
  envFile?: string | false;
}

/**
 * Reads and validates the environment. Values from the dotenv file are copied into `source` (normally
 * `process.env`) for keys it does not have, never over keys it has, so secrets that the YAML config names
 * (e.g. a PagerDuty routing key) are visible to whoever reads `process.env` afterwards. Empty values count
 * as unset.
 *
 * @throws ConfigError naming every missing or invalid key and what it expects.
 */
export function loadEnv<N extends Need = 'all'>(
  source: Record<string, string | undefined> = process.env,
  options: LoadEnvOptions<N> = {},
): Env<N> {
  const envFile = options.envFile ?? '.env';
  if (envFile !== false) fillFromDotenv(source, envFile);
  // Every key in NEEDED[need] is checked present, which is what Env<N> adds to AnyEnv.
  return validate(source, ENV_VAR_NAMES, NEEDED[options.need ?? 'all']) as Env<N>;
}

/**
 * Validates only `names`, with the same rules and errors as loadEnv, for a tool that uses a few of the
 * variables (the CLI needs Redis, not Slack or OpenAI secrets). Reads no dotenv file: see fillFromDotenv.
 * @throws ConfigError naming every invalid key and what it expects.
 */
export function loadEnvVars<K extends VarName>(
  source: Readonly<Record<string, string | undefined>>,
  names: readonly K[],
): Pick<AnyEnv, K> {
  return validate(source, names, []) as Pick<AnyEnv, K>;
}

function validate(
  source: Readonly<Record<string, string | undefined>>,
  names: readonly VarName[],
  required: readonly VarName[],
): Partial<AnyEnv> {
  const input = Object.fromEntries(names.map((name) => [name, nonEmpty(source[name])]));
  const problems = new Map<VarName, string>();
  for (const name of required) {
    if (input[name] === undefined) problems.set(name, `required (${VARS[name].expected})`);
  }
  const mask = Object.fromEntries(names.map((name) => [name, true])) as Partial<Record<VarName, true>>;
  const parsed = envSchema.pick(mask).safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path[0] as VarName;
      if (!problems.has(name)) problems.set(name, describeBadValue(name, input[name]));
    }
  }
  if (parsed.success && names.includes('REDIS_URL') && names.includes('REDIS_CLUSTER_NODES')) {
    const vars = parsed.data as Parameters<typeof redisVarProblems>[0];
    for (const [name, problem] of redisVarProblems(vars, input.REDIS_URL !== undefined)) {
      problems.set(name as VarName, problem);
    }
  }
  if (!parsed.success || problems.size > 0) {
    const listed = ENV_VAR_NAMES.flatMap((key) => {
      const problem = problems.get(key);
      return problem === undefined ? [] : [{ key, problem }];
    });
    throw new ConfigError('environment', listed);
  }
  return parsed.data as Partial<AnyEnv>;
}

/**
 * Copies the dotenv file's values into `target` for keys it lacks or holds empty (the real environment
 * wins unless its value is empty); a missing file is fine. Secrets the policy names resolve the same way afterwards.
 * @throws ConfigError naming the file when it exists but cannot be read.
 */
export function fillFromDotenv(target: Record<string, string | undefined>, path = '.env'): void {
  // An empty variable counts as unset, here too: `export SLACK_BOT_TOKEN=` in a shell must not hide the
  // file's value and make start-up call a variable the file sets "required".
  const fromFile: Record<string, string> = {};
  const result = loadDotenvFile({ path, processEnv: fromFile, override: false, quiet: true });
  for (const [key, value] of Object.entries(fromFile)) {
    if (target[key] === undefined || target[key] === '') target[key] = value;
  }
  if (result.error && result.error.code !== 'ENOENT') {
    throw new ConfigError('environment', [
      { key: path, problem: `cannot read this dotenv file (${result.error.message})` },
    ]);
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}

function describeBadValue(name: VarName, value: string | undefined): string {
  const { expected } = VARS[name];
  if (value === undefined) return `required (${expected})`;
  if ('secret' in VARS[name]) return `invalid value (${expected})`;
  const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return `invalid value ${JSON.stringify(shown)} (${expected})`;
}
