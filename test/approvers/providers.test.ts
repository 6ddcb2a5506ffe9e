import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { opsgenieOncallEmails } from '../../src/approvers/oncall/opsgenie.js';
import { pagerdutyOncallEmails } from '../../src/approvers/oncall/pagerduty.js';
import { OncallLookupError } from '../../src/approvers/oncall/provider-http.js';
import type { OncallSource } from '../../src/approvers/oncall/source.js';
import { type FakeOpsgenie, startFakeOpsgenie } from '../fakes/opsgenie-server.js';
import { type FakePagerDutyRest, startFakePagerDutyRest } from '../fakes/pagerduty-rest-server.js';

const schedule: OncallSource = { provider: 'pagerduty', schedule: 'P1ABC', tokenEnv: 'PD' };
const level = (n: number): OncallSource => ({
  provider: 'pagerduty',
  escalationPolicy: 'P2DEF',
  level: n,
  tokenEnv: 'PD',
});

async function lookupError(p: Promise<unknown>): Promise<OncallLookupError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OncallLookupError);
  return err as OncallLookupError;
}

describe('PagerDuty GET /oncalls', () => {
  let pd: FakePagerDutyRest;
  const config = () => ({ baseUrl: pd.url, token: 'pd-test-token', timeoutMs: 5_000 });
  beforeEach(async () => {
    pd = await startFakePagerDutyRest();
  });
  afterEach(() => pd.close());

  it('asks for a schedule with users included and the token header, and reads their emails', async () => {
    pd.setOncalls([
      { email: 'Alice@Example.com', escalationPolicy: 'P2DEF', level: 1, schedule: 'P1ABC' },
      { email: 'bob@example.com', escalationPolicy: 'P2DEF', level: 2, schedule: 'P9XYZ' },
    ]);
    expect(await pagerdutyOncallEmails(schedule, config())).toEqual(['alice@example.com']);
    const [req] = pd.oncallRequests();
    const q = new URL(req?.path ?? '', 'http://x').searchParams;
    expect(q.getAll('schedule_ids[]')).toEqual(['P1ABC']);
    expect(q.getAll('include[]')).toEqual(['users']);
    expect(req?.headers.authorization).toBe('Token token=pd-test-token');
  });

  it('filters an escalation policy by level', async () => {
    pd.setOncalls([
      { email: 'first@example.com', escalationPolicy: 'P2DEF', level: 1, schedule: 'P1ABC' },
      { email: 'second@example.com', escalationPolicy: 'P2DEF', level: 2 },
      { email: 'other@example.com', escalationPolicy: 'P3GHI', level: 2 },
    ]);
    expect(await pagerdutyOncallEmails(level(1), config())).toEqual(['first@example.com']);
    expect(await pagerdutyOncallEmails(level(2), config())).toEqual(['second@example.com']);
  });

  it('follows offset/limit pagination until more is false, and removes duplicates', async () => {
    const rows = Array.from({ length: 230 }, (_, i) => ({
      email: `u${i % 150}@example.com`,
      escalationPolicy: 'P2DEF',
      level: 1,
      schedule: 'P1ABC',
    }));
    pd.setOncalls(rows);
    const emails = await pagerdutyOncallEmails(schedule, config());
    expect(emails).toHaveLength(150);
    expect(pd.oncallRequests().map((r) => new URL(r.path, 'http://x').searchParams.get('offset'))).toEqual([
      '0',
      '100',
      '200',
    ]);
  });

  it('sees an override in place of the rotation, and an empty schedule as nobody', async () => {
    pd.setOncalls([{ email: 'alice@example.com', escalationPolicy: 'P2DEF', level: 1, schedule: 'P1ABC' }]);
    pd.override('P1ABC', 'carol@example.com');
    expect(await pagerdutyOncallEmails(schedule, config())).toEqual(['carol@example.com']);
    pd.setOncalls([]);
    expect(await pagerdutyOncallEmails(schedule, config())).toEqual([]);
  });

  it('reports 429 with its Retry-After, 5xx and a wrong token as lookup errors', async () => {
    pd.failNext(1, 429, 7);
    const limited = await lookupError(pagerdutyOncallEmails(schedule, config()));
    expect(limited.code).toBe('rate_limited');
    expect(limited.retryAfterMs).toBe(7_000);
    pd.failNext(1, 503);
    expect((await lookupError(pagerdutyOncallEmails(schedule, config()))).code).toBe('provider_error');
    const wrong = await lookupError(pagerdutyOncallEmails(schedule, { ...config(), token: 'nope' }));
    expect(wrong.message).toBe('PagerDuty answered HTTP 401');
  });

  it('reports an unreachable server', async () => {
    await pd.close();
    const err = await lookupError(pagerdutyOncallEmails(schedule, config()));
    expect(err.code).toBe('unreachable');
    pd = await startFakePagerDutyRest();
  });
});

describe('Opsgenie GET /v2/schedules/{name}/on-calls', () => {
  let og: FakeOpsgenie;
  const config = () => ({ baseUrl: og.url, token: 'og-test-key', timeoutMs: 5_000 });
  const source: OncallSource = { provider: 'opsgenie', schedule: 'payments_schedule', tokenEnv: 'OG' };
  beforeEach(async () => {
    og = await startFakeOpsgenie();
  });
  afterEach(() => og.close());

  it('reads users from data.onCallParticipants, through teams and escalations, by schedule name', async () => {
    og.setSchedule('payments_schedule', [
      { type: 'user', name: 'dana@example.com' },
      { type: 'team', name: 'payments', onCallParticipants: [{ type: 'user', name: 'Eve@example.com' }] },
    ]);
    expect(await opsgenieOncallEmails(source, config())).toEqual(['dana@example.com', 'eve@example.com']);
    const [req] = og.oncallRequests();
    expect(req?.path).toBe('/v2/schedules/payments_schedule/on-calls?scheduleIdentifierType=name&flat=false');
    expect(req?.headers.authorization).toBe('GenieKey og-test-key');
  });

  it('reads an empty schedule as nobody, and an unknown one, 429 and 5xx as errors', async () => {
    og.setSchedule('payments_schedule', []);
    expect(await opsgenieOncallEmails(source, config())).toEqual([]);
    const unknown = await lookupError(opsgenieOncallEmails({ ...source, schedule: 'nope' }, config()));
    expect(unknown.message).toBe('Opsgenie answered HTTP 404');
    og.failNext(1, 429, 3);
    expect((await lookupError(opsgenieOncallEmails(source, config()))).retryAfterMs).toBe(3_000);
    og.failNext(1, 500);
    expect((await lookupError(opsgenieOncallEmails(source, config()))).code).toBe('provider_error');
  });
});
