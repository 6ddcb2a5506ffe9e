/** `loopgate model check` and checkModel against the fake server behaving as llama.cpp and as OpenAI. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { parsePolicy } from '../../src/config/policy.js';
import { doctorModelCheck } from '../../src/doctor/model.js';
import { checkModel, modelCheckText } from '../../src/doctor/model-check.js';
import { buildTools } from '../../src/tools/registry.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/openai-server.js';

const POLICY = `
model: { name: puppet, prices: { input_per_mtok: 0, output_per_mtok: 0 } }
approvals: { approvers: [U0LEAD] }
tools:
  current_time: {}
  http_get: { allow: ["https://status.example/"] }
  page_oncall: { routingKeyEnv: PD_KEY }
`;
const ENV = { PD_KEY: 'k' };
const CALL = {
  toolCalls: [{ name: 'http_get', arguments: '{"url":"https://status.example/payments"}' }],
};
const CACHED = { prompt_tokens: 700, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 690 } };

let fake: FakeOpenAI | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const knobs = (url: string) => ({
  OPENAI_API_KEY: 'local',
  OPENAI_BASE_URL: url,
  OPENAI_MAX_RETRIES: 0,
  OPENAI_TIMEOUT_MS: 5_000,
});

describe('checkModel', () => {
  it('tells that llama.cpp refused the standard schemas, in its words, and that lenient works', async () => {
    fake = await startFakeOpenAI([CALL, { ...CALL, usage: CACHED }], { schemaCheck: 'llama.cpp' });
    const policy = parsePolicy(POLICY, { env: ENV });
    const tools = await buildTools(policy, { env: ENV });
    const report = await checkModel({ env: knobs(fake.url), policy, tools });
    expect(report).toMatchObject({
      accepted: true,
      configuredForm: 'standard',
      form: 'lenient',
      refusal: { status: 400, message: 'Failed to initialize samplers: failed to parse grammar' },
      toolCalls: [{ tool: 'http_get', json: true, valid: true }],
      usage: { reported: true, inputTokens: 10, outputTokens: 5 },
      cachedTokens: 690,
      tools: 3,
    });
    const text = modelCheckText(report);
    expect(text).toContain('schema form needed:   lenient (configured standard; set model.schemas: lenient)');
    expect(text).toContain('cached tokens:        690 on the repeated request');
  });

  it('reports a call whose arguments break the full schema, and a server that refuses everything', async () => {
    fake = await startFakeOpenAI([
      { toolCalls: [{ name: 'http_get', arguments: '{"url":42}' }], usage: null },
      {
        status: 401,
        body: {
          error: {
            message: 'Incorrect API key provided: sk-abcdefghijkl',
            type: 'x',
            code: 'invalid_api_key',
          },
        },
      },
    ]);
    const policy = parsePolicy(POLICY, { env: ENV });
    const tools = await buildTools(policy, { env: ENV });
    const report = await checkModel({ env: knobs(fake.url), policy, tools });
    expect(report.accepted).toBe(true);
    expect(report.form).toBe('standard');
    expect(report.toolCalls[0]).toMatchObject({ tool: 'http_get', json: true, valid: false });
    expect(report.usage).toEqual({ reported: false, inputTokens: 0, outputTokens: 0 });
    expect(report.cachedTokens).toBeNull();

    fake.push({
      status: 401,
      body: { error: { message: 'Incorrect API key provided: sk-abcdefghijkl', type: 'x' } },
    });
    const refused = await checkModel({ env: knobs(fake.url), policy, tools });
    expect(refused.accepted).toBe(false);
    expect(refused.refusal).toEqual({ status: 401, message: 'Incorrect API key provided: [redacted]' });
  });
});

describe('loopgate model check', () => {
  it('prints the check and exits 0 when the server accepts the tools, 1 when it does not', async () => {
    fake = await startFakeOpenAI([
      CALL,
      CALL,
      {
        status: 400,
        body: {
          error: { message: 'Invalid value for tools[0].function.parameters', type: 'invalid_request_error' },
        },
      },
      {
        status: 400,
        body: {
          error: { message: 'Invalid value for tools[0].function.parameters', type: 'invalid_request_error' },
        },
      },
    ]);
    const dir = await mkdtemp(join(tmpdir(), 'loopgate-model-check-'));
    dirs.push(dir);
    const path = join(dir, 'loopgate.yaml');
    await writeFile(path, POLICY);
    const run = async () => {
      const stdout = new PassThrough();
      let out = '';
      stdout.on('data', (d) => (out += String(d)));
      const code = await runCli(['model', 'check', path], {
        stdout,
        stderr: new PassThrough(),
        env: { ...ENV, OPENAI_API_KEY: 'local', OPENAI_BASE_URL: fake!.url, OPENAI_MAX_RETRIES: '0' },
        now: () => Date.now(),
      });
      return { code, out };
    };
    const ok = await run();
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('accepted the tools:   yes');
    expect(ok.out).toContain('tool calls parse:     yes (1 call: http_get)');
    const refused = await run();
    expect(refused.code).toBe(1);
    expect(refused.out).toContain('accepted the tools:   no');
    expect(refused.out).toContain(
      'server said:          HTTP 400: Invalid value for tools[0].function.parameters',
    );
  });
});

describe("loopgate doctor's model line (checkModel read as one result)", () => {
  it('warns, naming model.schemas, when only the lenient retry was accepted, as the workers would send it', async () => {
    fake = await startFakeOpenAI([CALL], { schemaCheck: 'llama.cpp' });
    const policy = parsePolicy(POLICY, { env: ENV });
    const tools = await buildTools(policy, { env: ENV });
    const line = await doctorModelCheck({ env: knobs(fake.url), policy, tools });
    expect(line).toEqual({
      name: 'model puppet',
      status: 'warn',
      detail: `OPENAI_BASE_URL ${fake.url} refused the policy's 3 tools as model.schemas standard (HTTP 400: Failed to initialize samplers: failed to parse grammar) and accepted them as lenient; the workers retry that way on every first request: set model.schemas: lenient`,
    });
    // One refused request and the lenient one: no repeat for the cache.
    expect(fake.schemaRefused).toHaveLength(1);
    expect(fake.requests).toHaveLength(1);
  });

  it('is green for a server that accepts the tools, and fails in the server words for one that refuses every form, or a bad key', async () => {
    fake = await startFakeOpenAI([CALL]);
    const policy = parsePolicy(POLICY, { env: ENV });
    const tools = await buildTools(policy, { env: ENV });
    expect(await doctorModelCheck({ env: knobs(fake.url), policy, tools })).toEqual({
      name: 'model puppet',
      status: 'ok',
      detail: "answered a request with the policy's 3 tools (it called http_get)",
    });
    const refusal = {
      status: 400,
      body: { error: { message: 'tools are not supported by this model', type: 'invalid_request_error' } },
    };
    fake.push(refusal, refusal);
    expect(await doctorModelCheck({ env: knobs(fake.url), policy, tools })).toMatchObject({
      status: 'fail',
      detail: `OPENAI_BASE_URL ${fake.url} rejected a request with the policy's 3 tools (HTTP 400): tools are not supported by this model`,
    });
    fake.push({ status: 401, body: { error: { message: 'Incorrect API key provided: sk-abcdefghijkl' } } });
    expect(await doctorModelCheck({ env: knobs(fake.url), policy, tools })).toMatchObject({
      status: 'fail',
      detail: `OPENAI_BASE_URL ${fake.url} refused OPENAI_API_KEY (HTTP 401): Incorrect API key provided: [redacted]`,
    });
  });

  it('says it cannot reach a server that is not there, naming OPENAI_BASE_URL', async () => {
    const policy = parsePolicy(POLICY, { env: ENV });
    const tools = await buildTools(policy, { env: ENV });
    const line = await doctorModelCheck({ env: knobs('http://127.0.0.1:1/v1'), policy, tools });
    expect(line.status).toBe('fail');
    expect(line.detail).toMatch(
      /^cannot reach OPENAI_BASE_URL http:\/\/127\.0\.0\.1:1\/v1 \(.+\); check OPENAI_BASE_URL$/,
    );
  });
});
