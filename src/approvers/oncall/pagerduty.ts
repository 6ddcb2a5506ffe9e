/**
 * Who is on call now by PagerDuty: `GET /oncalls` (REST API v2) filtered by schedule, or by escalation
 * policy and level, with `include[]=users` so each entry carries the user's email. Classic pagination:
 * `offset`/`limit` until `more` is false (bounded, so a provider that always says `more` cannot loop us).
 */
import { z } from 'zod';
import { getJson, OncallLookupError } from './provider-http.js';
import type { OncallSource } from './source.js';

interface PagerDutyConfig {
  baseUrl: string;
  token: string;
  timeoutMs: number;
}

const PAGE = 100;
const MAX_PAGES = 20;

const oncallsPage = z.object({
  oncalls: z.array(
    z.object({
      user: z.object({ id: z.string(), email: z.string().optional(), summary: z.string().optional() }),
      escalation_level: z.number().optional(),
    }),
  ),
  more: z.boolean().optional(),
  offset: z.number().optional(),
});

/** The URL of one page of `GET /oncalls` for `source`. */
function oncallsUrl(baseUrl: string, source: OncallSource, offset: number): URL {
  const url = new URL('oncalls', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  const q = url.searchParams;
  if (source.escalationPolicy) {
    q.append('escalation_policy_ids[]', source.escalationPolicy);
    q.append('escalation_levels[]', String(source.level ?? 1));
  } else q.append('schedule_ids[]', source.schedule ?? '');
  q.append('include[]', 'users');
  q.set('time_zone', 'UTC');
  q.set('limit', String(PAGE));
  q.set('offset', String(offset));
  return url;
}

/** The emails of everyone on call now for `source` (deduplicated, in PagerDuty's order). */
export async function pagerdutyOncallEmails(
  source: OncallSource,
  config: PagerDutyConfig,
): Promise<string[]> {
  const emails: string[] = [];
  for (let page = 0, offset = 0; page < MAX_PAGES; page++) {
    const body = await getJson({
      url: oncallsUrl(config.baseUrl, source, offset),
      headers: {
        authorization: `Token token=${config.token}`,
        accept: 'application/vnd.pagerduty+json;version=2',
      },
      schema: oncallsPage,
      timeoutMs: config.timeoutMs,
      provider: 'PagerDuty',
    });
    for (const entry of body.oncalls) {
      // A schedule filter also returns other levels' entries that use it; level filters are exact.
      if (entry.user.email) emails.push(entry.user.email.toLowerCase());
    }
    if (!body.more) return [...new Set(emails)];
    if (body.oncalls.length === 0) {
      throw new OncallLookupError('bad_response', 'PagerDuty said more on-calls follow but sent none');
    }
    offset += body.oncalls.length;
  }
  throw new OncallLookupError('bad_response', `PagerDuty kept paginating past ${MAX_PAGES * PAGE} on-calls`);
}
