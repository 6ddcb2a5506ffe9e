/**
 * Prompts that cache: the system prompt and the tool list are one byte-identical prefix across the steps
 * of a run and across runs of one policy (the time is a note in the question), and the cached tokens a
 * server reports are priced at the cached rate, counted in the run's usage, the trace and the metrics.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { modelKnobs } from '../../src/config/model-knobs.js';
import { parsePolicy } from '../../src/config/policy.js';
import { limitsFromPolicy } from '../../src/config/policy-limits.js';
import type { EngineEvent } from '../../src/loop/engine-events.js';
import { createOpenAIModel } from '../../src/loop/openai-model.js';
import { runUntilPause } from '../../src/loop/run.js';
import { SchemaFormMemory } from '../../src/loop/schema-forms.js';
import { createRun, currentTimeNote } from '../../src/loop/state.js';
import { createMetrics, recordEngineEvent } from '../../src/metrics/metrics.js';
import { traceFromRunState } from '../../src/slack/trace.js';
import { traceModal } from '../../src/slack/trace-modal.js';
import { buildTools } from '../../src/tools/registry.js';
import { buildSystemPrompt } from '../../src/tools/system-prompt.js';
import { type FakeOpenAI, type FakeStep, startFakeOpenAI } from '../fakes/openai-server.js';
import { silentLogger } from '../support/engine.js';

const POLICY = `
model:
  name: gpt-test
  prices:
    gpt-test: { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 }
approvals: { approvers: [U0LEAD] }
channels: { prompt: { C0OPS: "On-call channel: be brief." } }
tools:
  current_time: {}
  http_get: { allow: ["https://status.example/"] }
  page_oncall: { routingKeyEnv: PD_KEY }
`;
const ENV = { PD_KEY: 'routing-key' };

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** Two steps per run: a read call, then the answer; the second reports most of its prompt as cached. */
const runScript = (): FakeStep[] => [
  {
    toolCalls: [{ name: 'current_time', arguments: '{}' }],
    usage: { prompt_tokens: 1000, completion_tokens: 20 },
  },
  {
    content: 'It is late.',
    usage: { prompt_tokens: 1100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 1000 } },
  },
];

async function world() {
  const policy = parsePolicy(POLICY, { env: ENV });
  const tools = await buildTools(policy, { env: ENV });
  fake = await startFakeOpenAI([...runScript(), ...runScript()]);
  const model = createOpenAIModel({
    apiKey: 'sk-test',
    baseURL: fake.url,
    model: 'gpt-test',
    schemaMemory: new SchemaFormMemory(),
    ...modelKnobs({ OPENAI_MAX_RETRIES: 0, OPENAI_TIMEOUT_MS: 5_000 }, policy, silentLogger),
  });
  const limits = limitsFromPolicy(policy, 'gpt-test');
  /** A run as the worker starts one (src/worker/handlers.ts). */
  async function run(now: number, question: string) {
    const events: EngineEvent[] = [];
    const state = createRun({
      runId: `run-${now}`,
      requester: { userId: 'U1' },
      systemPrompt: buildSystemPrompt({
        channelPrompt: policy.channels.prompt.C0OPS,
        toolNames: [...tools.keys()],
      }),
      question,
      questionNote: currentTimeNote(now),
      limits,
      now,
    });
    const outcome = await runUntilPause(state, {
      model,
      tools,
      clock: { now: () => now },
      emit: (e) => events.push(e),
      logger: silentLogger,
    });
    return { outcome, events };
  }
  return { run, fake };
}

describe('the request prefix', () => {
  it('is byte-identical across the steps of a run and across two runs of one policy', async () => {
    const w = await world();
    await w.run(Date.parse('2026-03-01T12:00:00Z'), 'What time is it?');
    await w.run(Date.parse('2026-03-02T08:30:00Z'), 'And now?');
    const requests = w.fake.requests;
    expect(requests).toHaveLength(4);
    const systems = requests.map((r) => JSON.stringify(r.body.messages[0]));
    const tools = requests.map((r) => JSON.stringify(r.body.tools));
    expect(new Set(systems).size).toBe(1);
    expect(new Set(tools).size).toBe(1);
    // Byte for byte as sent, not only equal once parsed.
    for (const r of requests) {
      expect(r.raw).toContain(systems[0]!);
      expect(r.raw).toContain(tools[0]!);
    }
    // The time reaches the model, after the prefix.
    expect(JSON.stringify(requests[0]!.body.messages[1])).toContain(
      'Current time (UTC): 2026-03-01T12:00:00.000Z.',
    );
    expect(JSON.stringify(requests[2]!.body.messages[1])).toContain(
      'Current time (UTC): 2026-03-02T08:30:00.000Z.',
    );
    expect(systems[0]).not.toMatch(/2026-03-0/);
  });
});

describe('cached tokens', () => {
  it('are priced at the cached rate, kept in the run, the trace and the metrics', async () => {
    const w = await world();
    const { outcome, events } = await w.run(Date.parse('2026-03-01T12:00:00Z'), 'What time is it?');
    const usage = outcome.state.usage;
    expect(usage.inputTokens).toBe(2100);
    expect(usage.cachedInputTokens).toBe(1000);
    // 1100 fresh input at $2, 1000 cached at $0.5, 30 output at $8 (per million).
    expect(usage.costUsd).toBeCloseTo((1100 * 2 + 1000 * 0.5 + 30 * 8) / 1e6, 12);

    const replied = events.filter((e) => e.type === 'model_replied');
    expect(replied.map((e) => e.usage.cachedInputTokens)).toEqual([undefined, 1000]);

    const metrics = createMetrics({}, { defaultMetrics: false });
    for (const e of events) recordEngineEvent(metrics, e);
    const text = await metrics.registry.metrics();
    expect(text).toContain('loopgate_model_tokens_total{kind="cached_input"} 1000');
    expect(text).toContain('loopgate_model_tokens_total{kind="input"} 2100');

    const view = traceFromRunState(outcome.state);
    expect(view.usage).toMatchObject({ cachedInputTokens: 1000 });
    expect(JSON.stringify(traceModal(view))).toContain('2130 tokens (2100 in, 1000 of them cached, 30 out)');
  });
});
