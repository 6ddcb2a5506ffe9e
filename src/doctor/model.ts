/**
 * The doctor's model line: `checkModel` (the check behind `loopgate model check`, through the adapter
 * and knobs production uses, so a server that needs lenient schemas is seen as the workers will see it)
 * read as one result. A server that answered only after the lenient retry is a warning that names the
 * setting; one that refused every form, or could not be reached, fails in the server's own words.
 */
import { checkModel, type ModelCheckInput, type ModelCheckReport } from './model-check.js';
import { type CheckResult, fail, ok, warn } from './types.js';

/** Resolves with one line of the doctor's report; never throws for a server's refusal. */
export type ModelCheck = (input: ModelCheckInput) => Promise<CheckResult>;

/** The doctor's line for a check report: where the server is, what it said and what to change. */
function modelCheckLine(r: ModelCheckReport, configuredBaseUrl: string | undefined): CheckResult {
  const name = `model ${r.model}`;
  const where = configuredBaseUrl === undefined ? 'OpenAI' : `OPENAI_BASE_URL ${r.baseURL}`;
  const tools = `the policy's ${r.tools} tool${r.tools === 1 ? '' : 's'}`;
  if (!r.accepted) {
    const said = r.refusal?.message ?? 'no answer';
    const status = r.refusal?.status ?? null;
    if (status === null) return fail(name, `cannot reach ${where} (${said}); check OPENAI_BASE_URL`);
    if (status === 401 || status === 403) {
      return fail(name, `${where} refused OPENAI_API_KEY (HTTP ${status}): ${said}`);
    }
    if (status === 404) {
      return fail(
        name,
        `${where} answered HTTP 404: ${said}; check OPENAI_MODEL (or model.name) and OPENAI_BASE_URL (it ends in /v1)`,
      );
    }
    return fail(name, `${where} rejected a request with ${tools} (HTTP ${status}): ${said}`);
  }
  if (r.form !== r.configuredForm && r.refusal) {
    return warn(
      name,
      `${where} refused ${tools} as model.schemas ${r.configuredForm} (HTTP ${r.refusal.status}: ${r.refusal.message}) and accepted them as ${r.form}; the workers retry that way on every first request: set model.schemas: ${r.form}`,
    );
  }
  const bad = r.toolCalls.find((c) => !c.valid);
  if (bad) {
    return warn(
      name,
      `answered a request with ${tools}, but its call of ${bad.tool} did not pass loopgate's validation (${bad.problem}); the model will often need a second try`,
    );
  }
  const called = r.toolCalls[0]?.tool;
  return ok(name, `answered a request with ${tools}${called ? ` (it called ${called})` : ''}`);
}

/** The default model check of the doctor: one request (no cache repeat) within `timeoutMs`. */
export const doctorModelCheck: ModelCheck = async (input) =>
  modelCheckLine(
    await checkModel({
      ...input,
      repeat: false,
      prompt: 'Reply with one short word, or call a tool if you must.',
    }),
    input.env.OPENAI_BASE_URL,
  );
