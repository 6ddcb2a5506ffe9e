/**
 * A fake PagerDuty REST API v2 `GET /oncalls` on 127.0.0.1, following the documented request and answer:
 * `Authorization: Token token=…` (else 401 with PagerDuty's error object), filters `schedule_ids[]`,
 * `escalation_policy_ids[]`, `escalation_levels[]`, `include[]=users` (without it a user is a reference
 * with no email), `time_zone` (an unknown zone is 400, code 2001), and classic pagination: `limit`
 * (default 25, at most 100), `offset`, `more`. Overrides replace a schedule's on-call; failures can be
 * scripted (429 with Retry-After, 5xx).
 */
import type { ServerResponse } from 'node:http';
import { type HttpFixture, type RecordedRequest, startHttpFixture } from './http-fixtures.js';

/** One row of /oncalls: someone on call for a level of an escalation policy, maybe through a schedule. */
export interface PagerDutyOncall {
  email: string;
  name?: string;
  escalationPolicy: string;
  level: number;
  /** The schedule that puts them there (absent: named directly on the level). */
  schedule?: string;
}

export interface FakePagerDutyRest extends HttpFixture {
  /** Replaces who is on call (a handoff). */
  setOncalls(rows: PagerDutyOncall[]): void;
  /** An override: `email` is on call for `schedule` instead of its rotation (null removes it). */
  override(schedule: string, email: string | null): void;
  /** The next `n` requests fail with `status` (and Retry-After seconds for 429). */
  failNext(n: number, status: number, retryAfterSeconds?: number): void;
  /** Requests to /oncalls, as sent. */
  oncallRequests(): RecordedRequest[];
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const pdError = (res: ServerResponse, status: number, code: number, message: string) =>
  send(res, status, { error: { message, code } });

const userId = (email: string) => `P${Buffer.from(email).toString('hex').slice(0, 6).toUpperCase()}`;

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export async function startFakePagerDutyRest(token = 'pd-test-token'): Promise<FakePagerDutyRest> {
  let rows: PagerDutyOncall[] = [];
  const overrides = new Map<string, string>();
  let failures: Array<{ status: number; retryAfter: number | undefined }> = [];

  const current = () =>
    rows.map((r) => {
      const over = r.schedule ? overrides.get(r.schedule) : undefined;
      return over ? { ...r, email: over, name: over.split('@')[0] } : r;
    });

  const fixture = await startHttpFixture((req, res) => {
    const url = new URL(req.path, 'http://fake');
    if (req.method !== 'GET' || url.pathname !== '/oncalls') return pdError(res, 404, 2100, 'Not Found');
    const failure = failures.shift();
    if (failure) {
      const headers: Record<string, string> =
        failure.retryAfter === undefined ? {} : { 'retry-after': String(failure.retryAfter) };
      return send(res, failure.status, { error: { message: 'scripted failure', code: 2000 } }, headers);
    }
    if (req.headers.authorization !== `Token token=${token}`) return pdError(res, 401, 2006, 'Unauthorized');
    const q = url.searchParams;
    const zone = q.get('time_zone') ?? 'UTC';
    if (!validZone(zone)) return pdError(res, 400, 2001, 'Invalid Input Provided');
    const limit = Math.min(Number(q.get('limit') ?? 25), 100);
    const offset = Number(q.get('offset') ?? 0);
    const schedules = q.getAll('schedule_ids[]');
    const policies = q.getAll('escalation_policy_ids[]');
    const levels = q.getAll('escalation_levels[]').map(Number);
    const withUsers = q.getAll('include[]').includes('users');
    const matching = current().filter(
      (r) =>
        (schedules.length === 0 || (r.schedule !== undefined && schedules.includes(r.schedule))) &&
        (policies.length === 0 || policies.includes(r.escalationPolicy)) &&
        (levels.length === 0 || levels.includes(r.level)),
    );
    const page = matching.slice(offset, offset + limit).map((r) => {
      const ref = { id: userId(r.email), type: 'user_reference', summary: r.name ?? r.email };
      return {
        user: withUsers
          ? { ...ref, type: 'user', email: r.email, name: r.name ?? r.email, time_zone: zone }
          : ref,
        escalation_policy: { id: r.escalationPolicy, type: 'escalation_policy_reference' },
        schedule: r.schedule ? { id: r.schedule, type: 'schedule_reference' } : null,
        escalation_level: r.level,
        start: new Date(Date.now() - 3_600_000).toISOString(),
        end: new Date(Date.now() + 3_600_000).toISOString(),
      };
    });
    send(res, 200, { oncalls: page, limit, offset, more: offset + limit < matching.length, total: null });
  });

  return {
    ...fixture,
    setOncalls: (next) => {
      rows = [...next];
    },
    override: (schedule, email) => {
      if (email === null) overrides.delete(schedule);
      else overrides.set(schedule, email);
    },
    failNext: (n, status, retryAfterSeconds) => {
      failures = [
        ...failures,
        ...Array.from({ length: n }, () => ({ status, retryAfter: retryAfterSeconds })),
      ];
    },
    oncallRequests: () => fixture.requests.filter((r) => r.path.startsWith('/oncalls')),
  };
}
