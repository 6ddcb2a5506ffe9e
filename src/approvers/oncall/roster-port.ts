/** The lookup port for on-call approvers: who is on call now for a source, as Slack user ids. */
import type { OncallSource } from './source.js';

/** Never thrown: a failure is `ok: false` with why, so the resolver can fail closed to the fallback. */
export type OncallNow = { ok: true; users: string[] } | { ok: false; why: string };

export interface OncallRoster {
  now(source: OncallSource): Promise<OncallNow>;
}
