/**
 * A fake Opsgenie `GET /v2/schedules/{identifier}/on-calls` on 127.0.0.1, following the documented
 * request and answer: `Authorization: GenieKey …` (else 401), `scheduleIdentifierType` id or name (an
 * unknown schedule is 404), `flat` (true: `data.onCallRecipients`, the usernames; false:
 * `data.onCallParticipants`, users and the teams or escalations holding them). Failures can be scripted
 * (429 with Retry-After, 5xx).
 */
import type { ServerResponse } from 'node:http';
import { type HttpFixture, type RecordedRequest, startHttpFixture } from './http-fixtures.js';

export type OpsgenieParticipant =
  | { type: 'user'; name: string }
  | { type: 'team' | 'escalation'; name: string; onCallParticipants: OpsgenieParticipant[] };

export interface FakeOpsgenie extends HttpFixture {
  /** Who is on call for a schedule (by name; its id is `id-<name>`); an empty list: nobody. */
  setSchedule(name: string, participants: OpsgenieParticipant[]): void;
  failNext(n: number, status: number, retryAfterSeconds?: number): void;
  oncallRequests(): RecordedRequest[];
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ ...(body as object), took: 0.01, requestId: 'req-fake' }));
};

const usernames = (list: readonly OpsgenieParticipant[]): string[] =>
  list.flatMap((p) => (p.type === 'user' ? [p.name] : usernames(p.onCallParticipants)));

export async function startFakeOpsgenie(key = 'og-test-key'): Promise<FakeOpsgenie> {
  const schedules = new Map<string, OpsgenieParticipant[]>();
  let failures: Array<{ status: number; retryAfter: number | undefined }> = [];

  const fixture = await startHttpFixture((req, res) => {
    const url = new URL(req.path, 'http://fake');
    const match = /^\/v2\/schedules\/([^/]+)\/on-calls$/.exec(url.pathname);
    if (req.method !== 'GET' || !match) return send(res, 404, { message: 'Not Found' });
    const failure = failures.shift();
    if (failure) {
      const headers: Record<string, string> =
        failure.retryAfter === undefined ? {} : { 'retry-after': String(failure.retryAfter) };
      return send(res, failure.status, { message: 'scripted failure' }, headers);
    }
    if (req.headers.authorization !== `GenieKey ${key}`)
      return send(res, 401, { message: 'Could not authenticate' });
    const identifier = decodeURIComponent(match[1] ?? '');
    const byName = url.searchParams.get('scheduleIdentifierType') === 'name';
    const name = byName ? identifier : identifier.replace(/^id-/, '');
    const participants = schedules.get(name);
    if (!participants || (!byName && !identifier.startsWith('id-'))) {
      return send(res, 404, { message: `No schedule exists with ${byName ? 'name' : 'id'} [${identifier}]` });
    }
    const parent = { id: `id-${name}`, name, enabled: true };
    const data =
      url.searchParams.get('flat') === 'true'
        ? { _parent: parent, onCallRecipients: usernames(participants) }
        : { _parent: parent, onCallParticipants: participants };
    send(res, 200, { data });
  });

  return {
    ...fixture,
    setSchedule: (name, participants) => {
      schedules.set(name, participants);
    },
    failNext: (n, status, retryAfterSeconds) => {
      failures = [
        ...failures,
        ...Array.from({ length: n }, () => ({ status, retryAfter: retryAfterSeconds })),
      ];
    },
    oncallRequests: () => fixture.requests.filter((r) => r.path.startsWith('/v2/schedules/')),
  };
}
