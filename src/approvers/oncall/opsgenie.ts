/**
 * Who is on call now by Opsgenie: `GET /v2/schedules/{identifier}/on-calls` (scheduleIdentifierType=name,
 * since the policy names schedules as people read them). `data.onCallParticipants` lists users (whose
 * `name` is their Opsgenie username, an email) and teams or escalations holding users in turn.
 */
import { z } from 'zod';
import { getJson } from './provider-http.js';
import type { OncallSource } from './source.js';

interface OpsgenieConfig {
  baseUrl: string;
  token: string;
  timeoutMs: number;
}

interface Participant {
  name?: string | undefined;
  type?: string | undefined;
  onCallParticipants?: Participant[] | undefined;
}

const participant: z.ZodType<Participant> = z.lazy(() =>
  z.object({
    name: z.string().optional(),
    type: z.string().optional(),
    onCallParticipants: z.array(participant).optional(),
  }),
);

const onCalls = z.object({ data: z.object({ onCallParticipants: z.array(participant) }) });

/** The URL of `GET /v2/schedules/{schedule}/on-calls`. */
function onCallsUrl(baseUrl: string, schedule: string): URL {
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  const url = new URL(`v2/schedules/${encodeURIComponent(schedule)}/on-calls`, base);
  url.searchParams.set('scheduleIdentifierType', 'name');
  url.searchParams.set('flat', 'false');
  return url;
}

const usersOf = (list: readonly Participant[]): string[] =>
  list.flatMap((p) =>
    p.type === 'user' && p.name ? [p.name.toLowerCase()] : usersOf(p.onCallParticipants ?? []),
  );

/** The emails of everyone on call now for the Opsgenie schedule of `source`. */
export async function opsgenieOncallEmails(source: OncallSource, config: OpsgenieConfig): Promise<string[]> {
  const body = await getJson({
    url: onCallsUrl(config.baseUrl, source.schedule ?? ''),
    headers: { authorization: `GenieKey ${config.token}` },
    schema: onCalls,
    timeoutMs: config.timeoutMs,
    provider: 'Opsgenie',
  });
  return [...new Set(usersOf(body.data.onCallParticipants))];
}
