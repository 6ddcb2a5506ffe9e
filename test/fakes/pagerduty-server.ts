/**
 * A fake PagerDuty Events API v2 endpoint (`POST /v2/enqueue`) on 127.0.0.1: records each event's JSON
 * and answers 202 `{ status: 'success', dedup_key }` like the real one, or what `answer` returns.
 */
import { type HttpFixture, type RecordedRequest, startHttpFixture } from './http-fixtures.js';

export interface FakePagerDuty extends HttpFixture {
  /** `${url}/v2/enqueue` */
  enqueueUrl: string;
  events: unknown[];
}

export async function startFakePagerDuty(
  answer?: (event: unknown, req: RecordedRequest) => { status: number; body: unknown },
): Promise<FakePagerDuty> {
  const events: unknown[] = [];
  const fixture = await startHttpFixture((req, res) => {
    const event: unknown = JSON.parse(req.body);
    events.push(event);
    const dedup = (event as { dedup_key?: string }).dedup_key;
    const out = answer?.(event, req) ?? {
      status: 202,
      body: { status: 'success', message: 'Event processed', dedup_key: dedup },
    };
    res.writeHead(out.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(out.body));
  });
  return { ...fixture, enqueueUrl: `${fixture.url}/v2/enqueue`, events };
}
