import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { runChecks, startProbeServer } from '../../src/metrics/http.js';
import { createMetrics, recordEngineEvent } from '../../src/metrics/metrics.js';

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

describe('metrics of retries and fallbacks', () => {
  it('count which model answered and each retried tool attempt', async () => {
    const m = createMetrics({}, { defaultMetrics: false });
    const replied = {
      type: 'model_replied' as const,
      runId: 'r',
      step: 1,
      toolCalls: 0,
      durationMs: 10,
      usage: { inputTokens: 1, outputTokens: 1 },
      costUsd: 0,
    };
    recordEngineEvent(m, { ...replied, model: 'gpt-primary' });
    recordEngineEvent(m, { ...replied, model: 'gpt-fallback' });
    recordEngineEvent(m, { ...replied, model: 'gpt-fallback' });
    recordEngineEvent(m, {
      type: 'tool_retried',
      runId: 'r',
      toolCallId: 'c',
      tool: 'http_get',
      effect: 'read',
      attempt: 1,
      code: 'http_status',
      message: '503',
      delayMs: 100,
    });
    const text = await m.registry.metrics();
    expect(text).toContain('loopgate_model_replies_total{model="gpt-primary"} 1');
    expect(text).toContain('loopgate_model_replies_total{model="gpt-fallback"} 2');
    expect(text).toContain('loopgate_tool_retries_total{tool="http_get",code="http_status"} 1');
  });
});

describe('metrics of sub-agents', () => {
  it('count sub-agent calls by agent and how the child ended', async () => {
    const m = createMetrics({}, { defaultMetrics: false });
    const ended = {
      type: 'subagent_finished' as const,
      runId: 'r',
      toolCallId: 'c',
      agent: 'triage',
      childRunId: 'c-1',
      durationMs: 10,
    };
    recordEngineEvent(m, { ...ended, outcome: 'completed' });
    recordEngineEvent(m, { ...ended, outcome: 'completed' });
    recordEngineEvent(m, { ...ended, outcome: 'failed' });
    const text = await m.registry.metrics();
    expect(text).toContain('loopgate_subagent_calls_total{agent="triage",outcome="completed"} 2');
    expect(text).toContain('loopgate_subagent_calls_total{agent="triage",outcome="failed"} 1');
  });
});

describe('metrics', () => {
  it('counts engine events: steps, tokens, cost, tool outcomes, approvals, finished runs', async () => {
    const m = createMetrics({}, { defaultMetrics: false });
    recordEngineEvent(m, { type: 'step_started', runId: 'r', step: 1 });
    recordEngineEvent(m, {
      type: 'model_replied',
      runId: 'r',
      step: 1,
      toolCalls: 1,
      durationMs: 1500,
      usage: { inputTokens: 100, outputTokens: 20 },
      costUsd: 0.25,
    });
    recordEngineEvent(m, {
      type: 'tool_finished',
      runId: 'r',
      toolCallId: 'c',
      tool: 'http_get',
      effect: 'read',
      ok: false,
      code: 'timeout',
      durationMs: 5,
    });
    recordEngineEvent(m, {
      type: 'finished',
      runId: 'r',
      status: 'stopped',
      stopReason: 'max_steps',
      message: 'x',
    });
    recordEngineEvent(m, {
      type: 'context_compacted',
      runId: 'r',
      durationMs: 900,
      upTo: 9,
      messages: 12,
      summary: 's',
      notes: 'n',
      step: 5,
      at: 0,
      tokensBefore: 7_000,
      tokensAfter: 2_000,
      calls: 2,
      usage: { inputTokens: 50, outputTokens: 10 },
      costUsd: 0.05,
      model: 'gpt-4.1-mini',
    });
    const text = await m.registry.metrics();
    expect(text).toContain('loopgate_steps_total 1');
    // A compaction's summary calls are model calls: their tokens and cost count too.
    expect(text).toContain('loopgate_model_tokens_total{kind="input"} 150');
    expect(text).toContain('loopgate_model_cost_usd_total 0.3');
    expect(text).toContain('loopgate_context_compactions_total 1');
    expect(text).toContain('loopgate_model_replies_total{model="gpt-4.1-mini"} 2');
    expect(text).toContain('loopgate_tool_calls_total{tool="http_get",effect="read",outcome="timeout"} 1');
    expect(text).toContain('loopgate_runs_finished_total{status="stopped",stop_reason="max_steps"} 1');
    expect(text).toContain('loopgate_model_latency_seconds_sum 1.5');
  });

  it('reads gauges from their sources at scrape time', async () => {
    let pending = 3;
    const m = createMetrics(
      { pendingApprovals: async () => pending, queueCounts: async () => ({ waiting: 2, active: 1 }) },
      { defaultMetrics: false },
    );
    expect(await m.registry.metrics()).toContain('loopgate_approvals_pending 3');
    pending = 0;
    const text = await m.registry.metrics();
    expect(text).toContain('loopgate_approvals_pending 0');
    expect(text).toContain('loopgate_queue_jobs{state="waiting"} 2');
  });

  it('serves /metrics, /healthz and /readyz naming the failing check', async () => {
    const m = createMetrics({}, { defaultMetrics: false });
    let redisUp = true;
    server = await startProbeServer({
      registry: m.registry,
      port: 0,
      portVariable: 'METRICS_PORT',
      host: '127.0.0.1',
      readiness: { redis: async () => redisUp, worker: async () => true },
    });
    const { port } = server.address() as { port: number };
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('loopgate_steps_total');
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    redisUp = false;
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({
      ok: false,
      checks: { redis: false, worker: true },
      why: ['redis: check failed'],
    });
  });

  it('a port in use (a second worker on one host) is a ConfigError naming the variable', async () => {
    const m = createMetrics({}, { defaultMetrics: false });
    const options = { registry: m.registry, host: '127.0.0.1', readiness: {} };
    server = await startProbeServer({ ...options, port: 0, portVariable: 'METRICS_PORT' });
    const { port } = server.address() as { port: number };
    const second = startProbeServer({ ...options, port, portVariable: 'METRICS_PORT' });
    await expect(second).rejects.toBeInstanceOf(ConfigError);
    await expect(second).rejects.toThrow(
      `invalid configuration in environment:\n  METRICS_PORT: port ${port} is already in use (set METRICS_PORT to a free port)`,
    );
  });

  it('counts a hanging check as failed', async () => {
    const result = await runChecks({ slow: () => new Promise<boolean>(() => {}) }, 50);
    expect(result).toEqual({ ok: false, checks: { slow: false } });
  });
});
