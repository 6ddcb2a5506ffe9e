/**
 * A compatibility check of the configured model endpoint with the policy's real tool list: one tiny
 * request (then the same request again, to see whether the server's prompt cache answers) through the
 * same adapter and knobs production uses. It tells whether the server accepted the tools, which schema
 * form it needed, whether the tool calls it returned parse and pass loopgate's own validation, and
 * whether it reports usage and cached tokens. Used by `loopgate model check` and `loopgate doctor`.
 */
import { type ModelEnv, modelKnobs } from '../config/model-knobs.js';
import type { Policy } from '../config/policy.js';
import { ModelError } from '../loop/errors.js';
import type { ModelReply } from '../loop/model-port.js';
import { createOpenAIModel, type SchemaFallback } from '../loop/openai-model.js';
import { type SchemaForm, SchemaFormMemory } from '../loop/schema-forms.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { toolSchemas } from '../loop/tool-schemas.js';
import { buildSystemPrompt } from '../tools/system-prompt.js';

export interface ModelCheckInput {
  env: Omit<ModelEnv, 'OPENAI_MODEL'> & { OPENAI_MODEL?: string | undefined };
  policy: Pick<Policy, 'model'>;
  tools: ReadonlyMap<string, AnyTool>;
  /** Default the built-in fetch. */
  fetch?: typeof fetch;
  /** What the model is asked; default a request that needs a read tool. */
  prompt?: string;
  /** Ask a second, identical time to see the server's prompt cache (default true). */
  repeat?: boolean;
  /** Time limit of each request; default twice OPENAI_TIMEOUT_MS. */
  timeoutMs?: number;
}

interface ToolCallCheck {
  tool: string;
  /** The arguments are JSON. */
  json: boolean;
  /** The tool exists and its full schema accepts the arguments. */
  valid: boolean;
  problem?: string;
}

export interface ModelCheckReport {
  baseURL: string;
  model: string;
  tools: number;
  /** The server answered the request with the tools. */
  accepted: boolean;
  /** The form that was configured, and the one the server accepted (lenient after a refusal). */
  configuredForm: SchemaForm;
  form: SchemaForm | null;
  /** The server's words when it refused a form (the first refusal) or failed. */
  refusal?: { status: number | null; message: string };
  toolCalls: ToolCallCheck[];
  /** The reply's text, shortened. */
  text: string | null;
  usage: { reported: boolean; inputTokens: number; outputTokens: number } | null;
  /** Cached tokens the second, identical request reported (null: none reported). */
  cachedTokens: number | null;
  durationsMs: number[];
}

const DEFAULT_PROMPT = 'Check the health of the payments service with one of your read tools, then stop.';

function checkCalls(reply: ModelReply, tools: ReadonlyMap<string, AnyTool>): ToolCallCheck[] {
  return reply.toolCalls.map((c) => {
    let args: unknown;
    try {
      args = JSON.parse(c.arguments);
    } catch {
      return { tool: c.name, json: false, valid: false, problem: 'arguments are not JSON' };
    }
    const tool = tools.get(c.name);
    if (!tool) return { tool: c.name, json: true, valid: false, problem: 'no such tool' };
    const parsed = tool.parameters.safeParse(args);
    return parsed.success
      ? { tool: c.name, json: true, valid: true }
      : { tool: c.name, json: true, valid: false, problem: parsed.error.issues[0]?.message ?? 'invalid' };
  });
}

export async function checkModel(input: ModelCheckInput): Promise<ModelCheckReport> {
  const { env, policy, tools } = input;
  const model = policy.model.name ?? env.OPENAI_MODEL ?? '';
  const baseURL = env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1';
  let fallback: SchemaFallback | undefined;
  const knobs = modelKnobs(env, policy, { warn() {} });
  const port = createOpenAIModel({
    ...knobs,
    apiKey: env.OPENAI_API_KEY,
    baseURL,
    model,
    // Its own memory: the check must see the server refuse, whatever this process learnt before.
    schemaMemory: new SchemaFormMemory(),
    onSchemaFallback: (f) => {
      fallback = f;
    },
    ...(input.fetch ? { fetch: input.fetch } : {}),
  });
  const request = {
    messages: [
      { role: 'system' as const, content: buildSystemPrompt({ toolNames: [...tools.keys()] }) },
      { role: 'user' as const, content: input.prompt ?? DEFAULT_PROMPT },
    ],
    tools: toolSchemas(tools),
    maxOutputTokens: 256,
  };
  const base: ModelCheckReport = {
    baseURL,
    model,
    tools: tools.size,
    accepted: false,
    configuredForm: policy.model.schemas,
    form: null,
    toolCalls: [],
    text: null,
    usage: null,
    cachedTokens: null,
    durationsMs: [],
  };
  const ask = async () => {
    const started = performance.now();
    const limit = input.timeoutMs ?? knobs.timeoutMs * 2;
    const reply = await port.complete({ ...request, signal: AbortSignal.timeout(limit) });
    base.durationsMs.push(Math.round(performance.now() - started));
    return reply;
  };
  let first: ModelReply;
  try {
    first = await ask();
  } catch (err) {
    const status = err instanceof ModelError ? (err.status ?? null) : null;
    const message =
      err instanceof ModelError && err.serverMessage !== undefined
        ? err.serverMessage
        : err instanceof Error
          ? err.message
          : String(err);
    return { ...base, refusal: { status, message } };
  }
  const report: ModelCheckReport = {
    ...base,
    accepted: true,
    form: fallback ? fallback.using : policy.model.schemas,
    ...(fallback ? { refusal: { status: fallback.status, message: fallback.serverMessage } } : {}),
    toolCalls: checkCalls(first, tools),
    text: first.content === null ? null : first.content.slice(0, 200),
    usage: first.usage
      ? { reported: true, inputTokens: first.usage.inputTokens, outputTokens: first.usage.outputTokens }
      : { reported: false, inputTokens: 0, outputTokens: 0 },
  };
  if (input.repeat === false) return report;
  try {
    const second = await ask();
    report.cachedTokens = second.usage?.cachedInputTokens ?? null;
  } catch {
    // The first answer already says what matters; a failing repeat only leaves the cache unknown.
  }
  return report;
}

/** The report as lines for a terminal. */
export function modelCheckText(r: ModelCheckReport): string {
  const yes = (b: boolean) => (b ? 'yes' : 'no');
  const lines = [`Model ${r.model} at ${r.baseURL}, ${r.tools} tools`];
  lines.push(`  accepted the tools:   ${yes(r.accepted)}`);
  if (r.refusal) {
    lines.push(
      `  server said:          ${r.refusal.status === null ? '' : `HTTP ${r.refusal.status}: `}${r.refusal.message}`,
    );
  }
  if (r.accepted) {
    lines.push(
      `  schema form needed:   ${r.form}${r.form !== r.configuredForm ? ` (configured ${r.configuredForm}; set model.schemas: ${r.form})` : ''}`,
    );
    const bad = r.toolCalls.filter((c) => !c.valid);
    lines.push(
      r.toolCalls.length === 0
        ? '  tool calls:           none returned (text reply)'
        : `  tool calls parse:     ${bad.length === 0 ? 'yes' : 'no'} (${r.toolCalls.length} call${r.toolCalls.length === 1 ? '' : 's'}: ${r.toolCalls.map((c) => `${c.tool}${c.valid ? '' : ` ✗ ${c.problem}`}`).join(', ')})`,
    );
    lines.push(
      `  usage returned:       ${r.usage?.reported ? `yes (${r.usage.inputTokens} in, ${r.usage.outputTokens} out)` : 'no (loopgate charges its own estimate)'}`,
    );
    lines.push(
      `  cached tokens:        ${r.cachedTokens === null ? 'not reported' : `${r.cachedTokens} on the repeated request`}`,
    );
    lines.push(`  time per request:     ${r.durationsMs.map((ms) => `${ms} ms`).join(', ')}`);
  }
  return lines.join('\n');
}
