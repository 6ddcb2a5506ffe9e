/**
 * A server that refuses the tools' schemas (llama.cpp's grammar error, OpenAI's strict-mode error) gets the
 * lenient form once, remembered per endpoint and model and logged once in the server's words, while
 * arguments are still judged against the full schema.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { modelKnobs } from '../../src/config/model-knobs.js';
import { parsePolicy } from '../../src/config/policy.js';
import type { ModelRequest } from '../../src/loop/model-port.js';
import { createOpenAIModel } from '../../src/loop/openai-model.js';
import { runUntilPause } from '../../src/loop/run.js';
import { SchemaFormMemory } from '../../src/loop/schema-forms.js';
import { toolSchema } from '../../src/loop/tool-schemas.js';
import { createPageOncall, pageOncallSettings } from '../../src/tools/page-oncall.js';
import { type FakeOpenAI, LLAMA_CPP_GRAMMAR_ERROR, startFakeOpenAI } from '../fakes/openai-server.js';
import { deps, newRun } from '../support/engine.js';

const pageTool = createPageOncall(pageOncallSettings.parse({ routingKeyEnv: 'PD_KEY' }), {
  env: { PD_KEY: 'routing-key' },
});
const pageSchema = toolSchema(pageTool);
const LOOKUP = {
  name: 'lookup',
  description: 'Look a service up',
  parameters: {
    type: 'object',
    properties: { service: { type: 'string', maxLength: 40 }, env: { type: 'string' } },
    required: ['service'],
  },
};

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function recordingLogger() {
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  return {
    warnings,
    logger: {
      warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }),
    },
  };
}

const policyWith = (line: string) =>
  parsePolicy(`model:\n  name: m\n  prices: { input_per_mtok: 1, output_per_mtok: 1 }\n  ${line}\n`, {
    env: {},
  });

function knobs(schemas: 'standard' | 'strict' | 'lenient', logger: { warn: (...a: never[]) => void }) {
  const policy = policyWith(`schemas: ${schemas}`);
  return modelKnobs({ OPENAI_MAX_RETRIES: 0, OPENAI_TIMEOUT_MS: 5_000 }, policy, logger as never);
}

const ask = (tools = [pageSchema]): ModelRequest => ({
  messages: [
    { role: 'system', content: 'You are loopgate.' },
    { role: 'user', content: 'Page someone about payments.' },
  ],
  tools,
  signal: new AbortController().signal,
});

const hasMaxLength2000 = (tools: unknown) => JSON.stringify(tools).includes('"maxLength":2000');

describe("llama.cpp's grammar refusal", () => {
  it('is answered by the lenient form once, remembered for the endpoint and model, and logged once', async () => {
    fake = await startFakeOpenAI([{ content: 'one' }, { content: 'two' }, { content: 'three' }], {
      schemaCheck: 'llama.cpp',
    });
    const { warnings, logger } = recordingLogger();
    const memory = new SchemaFormMemory();
    const options = {
      apiKey: 'local',
      baseURL: fake.url,
      model: 'puppet',
      schemaMemory: memory,
      ...knobs('standard', logger),
    };
    const model = createOpenAIModel(options);

    expect((await model.complete(ask())).content).toBe('one');
    expect(fake.schemaRefused).toHaveLength(1);
    expect(fake.schemaRefused[0]!.body).toEqual(LLAMA_CPP_GRAMMAR_ERROR);
    expect(hasMaxLength2000(fake.schemaRefused[0]!.tools)).toBe(true);
    expect(hasMaxLength2000(fake.requests[0]!.body.tools)).toBe(false);

    // The next request, and another port for the same endpoint and model, go lenient at once.
    expect((await model.complete(ask())).content).toBe('two');
    expect((await createOpenAIModel(options).complete(ask())).content).toBe('three');
    expect(fake.schemaRefused).toHaveLength(1);
    expect(fake.requests).toHaveLength(3);

    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.fields).toMatchObject({
      model: 'puppet',
      refused: 'standard',
      using: 'lenient',
      status: 400,
      server: 'Failed to initialize samplers: failed to parse grammar',
    });
    expect(warnings[0]!.message).toContain(
      'HTTP 400: Failed to initialize samplers: failed to parse grammar',
    );
  });

  it("is not retried when the lenient form is refused too: the server's words reach the caller", async () => {
    fake = await startFakeOpenAI([
      { status: 400, body: LLAMA_CPP_GRAMMAR_ERROR },
      { status: 400, body: LLAMA_CPP_GRAMMAR_ERROR },
    ]);
    const { warnings, logger } = recordingLogger();
    const model = createOpenAIModel({
      apiKey: 'local',
      baseURL: fake.url,
      model: 'puppet',
      schemaMemory: new SchemaFormMemory(),
      ...knobs('standard', logger),
    });
    await expect(model.complete(ask())).rejects.toMatchObject({
      status: 400,
      serverMessage: 'Failed to initialize samplers: failed to parse grammar',
    });
    expect(fake.requests).toHaveLength(2);
    expect(warnings).toHaveLength(0);
  });

  it('an argument violating the full schema (maxLength 2000) is still refused as an observation', async () => {
    const long = 'x'.repeat(2001);
    fake = await startFakeOpenAI(
      [
        {
          toolCalls: [
            {
              name: 'page_oncall',
              arguments: JSON.stringify({
                summary: 'payments down',
                severity: 'critical',
                details: { log: long },
              }),
            },
          ],
        },
        { content: 'I could not page: the details were too long.' },
      ],
      { schemaCheck: 'llama.cpp' },
    );
    const { warnings, logger } = recordingLogger();
    const model = createOpenAIModel({
      apiKey: 'local',
      baseURL: fake.url,
      model: 'puppet',
      schemaMemory: new SchemaFormMemory(),
      ...knobs('standard', logger),
    });
    const d = deps(model, { tools: new Map([['page_oncall', pageTool]]) });
    const outcome = await runUntilPause(newRun(), d.deps);

    expect(fake.schemaRefused).toHaveLength(1);
    expect(warnings).toHaveLength(1);
    expect(outcome.type).toBe('final');
    expect(outcome.state.status).toBe('completed');
    const result = outcome.state.messages.find((m) => m.role === 'tool');
    expect(result?.content).toContain('invalid_arguments');
    expect(result?.content).toMatch(/2000/);
    expect(outcome.state.turn).toBeNull();
    expect(outcome.state.actions).toHaveLength(0);
  });
});

describe("OpenAI's strict mode", () => {
  it("accepts loopgate's strict form (strict on every tool that can be strict)", async () => {
    fake = await startFakeOpenAI([{ content: 'ok' }], { schemaCheck: 'openai-strict' });
    const { warnings, logger } = recordingLogger();
    const model = createOpenAIModel({
      apiKey: 'sk-test',
      baseURL: fake.url,
      model: 'gpt-test',
      schemaMemory: new SchemaFormMemory(),
      ...knobs('strict', logger),
    });
    await model.complete(ask([pageSchema, LOOKUP]));
    expect(fake.schemaRefused).toHaveLength(0);
    const tools = fake.requests[0]!.body.tools!;
    expect(tools.map((t) => t.function.strict)).toEqual([undefined, true]);
    expect(warnings).toHaveLength(0);
  });

  it('refuses a standard schema sent as strict, in its documented error shape', async () => {
    fake = await startFakeOpenAI([{ content: 'unused' }], { schemaCheck: 'openai-strict' });
    const res = await fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', function: { ...LOOKUP, strict: true } }],
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        message:
          "Invalid schema for function 'lookup': In context=(), 'additionalProperties' is required to be supplied and to be false.",
        type: 'invalid_request_error',
        param: 'tools[0].function.parameters',
        code: 'invalid_function_parameters',
      },
    });
  });

  it('a strict-mode refusal falls back to the lenient form, logged once; nulls for optional arguments read as absent', async () => {
    const refusal = {
      error: {
        message:
          "Invalid schema for function 'lookup': In context=(), 'additionalProperties' is required to be supplied and to be false.",
        type: 'invalid_request_error',
        param: 'tools[0].function.parameters',
        code: 'invalid_function_parameters',
      },
    };
    fake = await startFakeOpenAI([
      { status: 400, body: refusal },
      { toolCalls: [{ name: 'lookup', arguments: '{"service":"payments","env":null}' }] },
    ]);
    const { warnings, logger } = recordingLogger();
    const model = createOpenAIModel({
      apiKey: 'sk-test',
      baseURL: fake.url,
      model: 'gpt-test',
      schemaMemory: new SchemaFormMemory(),
      ...knobs('strict', logger),
    });
    const reply = await model.complete(ask([LOOKUP]));
    expect(fake.requests[0]!.body.tools![0]!.function.strict).toBe(true);
    expect(fake.requests[1]!.body.tools![0]!.function.strict).toBeUndefined();
    // Sent lenient: a null is the model's own value, left for validation to judge.
    expect(reply.toolCalls[0]!.arguments).toBe('{"service":"payments","env":null}');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.fields.server).toBe(refusal.error.message);
  });

  it('in strict form, a null for an optional argument is read back as absent before validation', async () => {
    fake = await startFakeOpenAI(
      [{ toolCalls: [{ name: 'lookup', arguments: '{"service":"payments","env":null}' }] }],
      {
        schemaCheck: 'openai-strict',
      },
    );
    const { logger } = recordingLogger();
    const model = createOpenAIModel({
      apiKey: 'sk-test',
      baseURL: fake.url,
      model: 'gpt-test',
      schemaMemory: new SchemaFormMemory(),
      ...knobs('strict', logger),
    });
    const reply = await model.complete(ask([LOOKUP]));
    expect(reply.toolCalls[0]!.arguments).toBe('{"service":"payments"}');
  });
});

describe('model.parallelToolCalls', () => {
  it('false is sent as parallel_tool_calls: false', async () => {
    fake = await startFakeOpenAI([{ content: 'ok' }]);
    const policy = policyWith('parallelToolCalls: false');
    const model = createOpenAIModel({
      apiKey: 'sk-test',
      baseURL: fake.url,
      model: 'gpt-test',
      ...modelKnobs({ OPENAI_MAX_RETRIES: 0, OPENAI_TIMEOUT_MS: 5_000 }, policy, { warn() {} } as never),
    });
    await model.complete(ask([LOOKUP]));
    expect(fake.requests[0]!.body.parallel_tool_calls).toBe(false);
  });
});
