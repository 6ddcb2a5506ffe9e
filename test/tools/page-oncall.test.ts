import { afterEach, describe, expect, it } from 'vitest';
import { createPageOncall, dedupKey, pageOncallSettings } from '../../src/tools/page-oncall.js';
import { type FakePagerDuty, startFakePagerDuty } from '../fakes/pagerduty-server.js';
import { previewOf, run, toolContext } from './tool-harness.js';

const ROUTING_KEY = 'R0UT1NGKEY-very-secret';
let pd: FakePagerDuty | undefined;

afterEach(async () => {
  await pd?.close();
  pd = undefined;
});

async function setup(answer?: Parameters<typeof startFakePagerDuty>[0]) {
  pd = await startFakePagerDuty(answer);
  const settings = pageOncallSettings.parse({
    url: pd.enqueueUrl,
    routingKeyEnv: 'PD_ROUTING_KEY',
    source: 'loopgate-test',
  });
  return createPageOncall(settings, { env: { PD_ROUTING_KEY: ROUTING_KEY } });
}

const page = {
  summary: 'Payments API p99 latency above 2 s',
  severity: 'critical',
  details: { dashboard: 'https://grafana/x' },
};

describe('page_oncall', () => {
  it('sends an Events API v2 trigger with the routing key and a dedup key from the run', async () => {
    const tool = await setup();
    const ctx = toolContext({
      runId: 'run-77',
      idempotencyKey: 'run-77:call-2',
      requester: { userId: 'U0ALICE' },
    });
    const out = await run(tool, page, ctx);
    expect(pd?.events).toEqual([
      {
        routing_key: ROUTING_KEY,
        event_action: 'trigger',
        dedup_key: dedupKey('run-77', page.summary),
        client: 'loopgate',
        payload: {
          summary: page.summary,
          severity: 'critical',
          source: 'loopgate-test',
          custom_details: { dashboard: 'https://grafana/x', loopgate_run: 'run-77', requested_by: 'U0ALICE' },
        },
      },
    ]);
    expect(pd?.requests[0]?.headers['idempotency-key']).toBe('run-77:call-2');
    expect(out).toEqual({
      paged: true,
      severity: 'critical',
      dedupKey: dedupKey('run-77', page.summary),
      status: 202,
    });
    expect(JSON.stringify(out)).not.toContain(ROUTING_KEY);
  });

  it('derives the same dedup key for the same run and summary only', () => {
    expect(dedupKey('run-1', 'disk full')).toBe(dedupKey('run-1', 'disk full'));
    expect(dedupKey('run-1', 'disk full')).not.toBe(dedupKey('run-2', 'disk full'));
    expect(dedupKey('run-1', 'disk full')).not.toBe(dedupKey('run-1', 'disk nearly full'));
    expect(dedupKey('run-1', 'x')).toMatch(/^loopgate:run-1:[0-9a-f]{16}$/);
  });

  it('is idempotent and notify', async () => {
    const tool = await setup();
    expect(tool.idempotent).toBe(true);
    expect(tool.effect).toBe('notify');
  });

  it('previews summary and severity, never the routing key', async () => {
    const tool = await setup();
    const preview = await previewOf(tool, page, toolContext({ runId: 'run-5' }));
    expect(preview).toContain('severity **critical**');
    expect(preview).toContain(page.summary);
    expect(preview).toContain(dedupKey('run-5', page.summary));
    expect(preview).not.toContain(ROUTING_KEY);
    expect(preview).not.toContain('PD_ROUTING_KEY');
  });

  it('reports a refused event without leaking the routing key', async () => {
    const tool = await setup(() => ({
      status: 400,
      body: {
        status: 'invalid event',
        message: `Event object is invalid: routing key ${ROUTING_KEY} unknown`,
      },
    }));
    const err = await run(tool, page).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'http_status', message: expect.stringContaining('400') });
    expect((err as Error).message).toContain('[redacted]');
    expect((err as Error).message).not.toContain(ROUTING_KEY);
  });

  it('refuses to build without its routing key in the environment', () => {
    const settings = pageOncallSettings.parse({ routingKeyEnv: 'PD_ROUTING_KEY' });
    expect(() => createPageOncall(settings, { env: {} })).toThrow(/PD_ROUTING_KEY is not set/);
  });
});
