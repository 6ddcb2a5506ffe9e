/**
 * On-call sources an approver entry may name instead of people: a PagerDuty schedule, a PagerDuty
 * escalation policy level, or an Opsgenie schedule. Each carries the name of the environment variable that
 * holds its API token (never the token), so the policy file stays free of secrets.
 */
import { z } from 'zod';
import { envVarName } from '../../tools/settings.js';

/** A source as stored on an approval record (normalised; tokens are looked up by name when used). */
export const oncallSourceSchema = z.strictObject({
  provider: z.enum(['pagerduty', 'opsgenie']),
  /** Schedule id (PagerDuty) or schedule name or id (Opsgenie). */
  schedule: z.string().optional(),
  /** PagerDuty escalation policy id and the level whose on-call decides (1 = first). */
  escalationPolicy: z.string().optional(),
  level: z.number().int().optional(),
  tokenEnv: z.string(),
});
export type OncallSource = z.infer<typeof oncallSourceSchema>;

const DEFAULT_TOKEN_ENV = { pagerduty: 'PAGERDUTY_API_TOKEN', opsgenie: 'OPSGENIE_API_KEY' } as const;

const pagerdutyId = z
  .string({ error: 'expected a PagerDuty id such as P1ABC2D' })
  .regex(/^[A-Z0-9]{2,20}$/, { error: 'expected a PagerDuty id such as P1ABC2D' });

const pagerdutySchedule = z.strictObject({ schedule: pagerdutyId, tokenEnv: envVarName.optional() });
const pagerdutyEscalation = z.strictObject({
  escalationPolicy: pagerdutyId,
  level: z
    .number({ error: 'expected an escalation level from 1' })
    .int({ error: 'expected an escalation level from 1' })
    .min(1, { error: 'expected an escalation level from 1' })
    .max(20, { error: 'expected at most level 20' })
    .default(1),
  tokenEnv: envVarName.optional(),
});

/** `pagerduty: { schedule: P1ABC }` or `pagerduty: { escalationPolicy: P2DEF, level: 1 }`. */
export const pagerdutySourceInput = z
  .union([pagerdutySchedule, pagerdutyEscalation], {
    error: 'expected { schedule: <id> } or { escalationPolicy: <id>, level: <n> }',
  })
  .transform(
    (s): OncallSource => ({
      provider: 'pagerduty',
      ...('schedule' in s
        ? { schedule: s.schedule }
        : { escalationPolicy: s.escalationPolicy, level: s.level }),
      tokenEnv: s.tokenEnv ?? DEFAULT_TOKEN_ENV.pagerduty,
    }),
  );

/** `opsgenie: { schedule: payments_schedule }` (a schedule's name or id). */
export const opsgenieSourceInput = z
  .strictObject({
    schedule: z
      .string({ error: 'expected an Opsgenie schedule name or id' })
      .regex(/^[A-Za-z0-9_. -]{1,100}$/, { error: 'expected an Opsgenie schedule name or id' }),
    tokenEnv: envVarName.optional(),
  })
  .transform(
    (s): OncallSource => ({
      provider: 'opsgenie',
      schedule: s.schedule,
      tokenEnv: s.tokenEnv ?? DEFAULT_TOKEN_ENV.opsgenie,
    }),
  );

/** A stable key per source (the cache key): `pagerduty:schedule:P1ABC`, `pagerduty:ep:P2DEF:1`. */
export function sourceKey(source: OncallSource): string {
  if (source.escalationPolicy) return `${source.provider}:ep:${source.escalationPolicy}:${source.level ?? 1}`;
  return `${source.provider}:schedule:${source.schedule ?? ''}`;
}

/** As people read it: `PagerDuty schedule P1ABC`, `PagerDuty escalation policy P2DEF level 2`. */
export function sourceLabel(source: OncallSource): string {
  const provider = source.provider === 'pagerduty' ? 'PagerDuty' : 'Opsgenie';
  if (source.escalationPolicy) {
    return `${provider} escalation policy ${source.escalationPolicy} level ${source.level ?? 1}`;
  }
  return `${provider} schedule ${source.schedule ?? ''}`;
}
