/**
 * The shape of an eval suite's files (docs/eval.md describes every key): the simulated world, the
 * scripted approver and user, the success criteria, the minefields and the reference (oracle) solution
 * of each task. Validated with zod when the suite loads; a bad file is refused with the key path.
 */
import { z } from 'zod';

const name = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, { error: 'expected lower case, digits, - or _' });
const args = z.record(z.string(), z.unknown());

/** A tool call: its tool, and arguments that must contain these values (a subset, compared deeply). */
const callMatch = z.strictObject({
  tool: z.string().min(1),
  args: args.optional(),
});
export type CallMatch = z.output<typeof callMatch>;

/** A check on the world's final state: a dotted path (`services.payments.prod.restarts`, `pages.length`). */
const stateCheck = z
  .strictObject({
    path: z.string().min(1),
    equals: z.json().optional(),
    atLeast: z.number().optional(),
    atMost: z.number().optional(),
    /** Case-insensitive regular expression the value (as text) must match. */
    matches: z.string().optional(),
  })
  .refine((c) => [c.equals, c.atLeast, c.atMost, c.matches].some((v) => v !== undefined), {
    error: 'expected at least one of equals, atLeast, atMost, matches',
  });
export type StateCheck = z.output<typeof stateCheck>;

// ---------------------------------------------------------------------------------------------------
// The simulated world
// ---------------------------------------------------------------------------------------------------

const health = z.enum(['ok', 'degraded', 'down']);

/** What repairs a service: a restart, a rollback, scaling up, or turning a feature flag off. */
const fix = z.union([z.enum(['restart', 'rollback', 'scale']), z.string().regex(/^flag:[a-z0-9_]+$/)]);

const deploy = z.strictObject({
  version: z.string(),
  at: z.string(),
  by: z.string(),
  change: z.string(),
});

const serviceEnvSpec = z.strictObject({
  health: health.default('ok'),
  /** HTTP statuses of the first health checks, in order (a flaky service: [503, 503]); then the state. */
  healthSequence: z.array(z.number().int().min(100).max(599)).default([]),
  /** Facts the health endpoint reports besides the status, e.g. `db_pool: exhausted`. */
  checks: z.record(z.string(), z.string()).default({}),
  /** What the health endpoint reports once the service is fixed (default: every check ok). */
  healthyChecks: z.record(z.string(), z.string()).optional(),
  version: z.string().default('v1'),
  previousVersion: z.string().optional(),
  replicas: z.number().int().min(0).default(3),
  fixedBy: z.array(fix).default([]),
  /** HTTP status the deploy API answers to these actions instead of doing them (e.g. restart: 500). */
  failing: z
    .partialRecord(z.enum(['restart', 'rollback', 'scale']), z.number().int().min(400).max(599))
    .default({}),
  logs: z.array(z.string()).default([]),
  deploys: z.array(deploy).default([]),
});
export type ServiceEnvSpec = z.output<typeof serviceEnvSpec>;

const metricSeries = z.strictObject({
  labels: z.record(z.string(), z.string()),
  value: z.number(),
  /** The value once `service`/`env` is healthy (after a fix). */
  healthyValue: z.number().optional(),
  service: z.string().optional(),
  env: z.string().optional(),
});

const metric = z.strictObject({
  /** Case-insensitive regular expression matched against the PromQL query. */
  query: z.string().min(1),
  series: z.array(metricSeries),
});

const alert = z.strictObject({
  id: z.string().min(1),
  name: z.string(),
  service: z.string(),
  env: z.string(),
  severity: z.string(),
  summary: z.string(),
  since: z.string(),
});

const incident = z.strictObject({ title: z.string(), status: z.string(), updates: z.array(z.string()) });

export const worldSpec = z.strictObject({
  /** Services by name, then by environment. */
  services: z.record(name, z.record(name, serviceEnvSpec)).default({}),
  metrics: z.array(metric).default([]),
  /** HTTP statuses of the first Prometheus queries, in order (a flaky Prometheus), then normal answers. */
  prometheusSequence: z.array(z.number().int().min(100).max(599)).default([]),
  statusPage: z
    .strictObject({
      components: z.record(z.string(), z.string()).default({}),
      incidents: z.array(incident).default([]),
    })
    .default({ components: {}, incidents: [] }),
  alerts: z.array(alert).default([]),
  oncall: z.record(z.string(), z.strictObject({ primary: z.string(), secondary: z.string() })).default({}),
  flags: z.record(z.string(), z.boolean()).default({}),
  /** HTTP status PagerDuty answers instead of accepting a page. */
  pagerdutyStatus: z.number().int().min(200).max(599).default(202),
  /** Extra runbook files (name to Markdown) besides the suite's runbooks directory. */
  runbooks: z.record(z.string().regex(/^[A-Za-z0-9_-]+\.md$/), z.string()).default({}),
});
export type WorldSpec = z.output<typeof worldSpec>;

// ---------------------------------------------------------------------------------------------------
// People: the scripted approver and the scripted user
// ---------------------------------------------------------------------------------------------------

const approverRule = z
  .strictObject({
    /** Which gated calls this rule decides; absent: any. */
    match: callMatch.optional(),
    decide: z.enum(['approve', 'reject', 'expire', 'edit']),
    reason: z.string().optional(),
    /** `edit`: the arguments the approver changes (merged over the model's, objects key by key). */
    args: args.optional(),
    /**
     * Slack user id of the approver, or several: with a quorum, each approves in turn until it is reached
     * (too few who may approve: the approval expires). Default the asked approvers who may approve.
     */
    by: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  })
  .refine((r) => (r.decide === 'edit') === (r.args !== undefined), {
    error: 'args is required with decide: edit, and only there',
  });
export type ApproverRule = z.output<typeof approverRule>;

const followUp = z.strictObject({
  say: z.string().min(1),
  /** `asked`: only when the previous answer asked something (has a `?`); default always. */
  when: z.enum(['always', 'asked']).default('always'),
});

// ---------------------------------------------------------------------------------------------------
// Criteria and minefields
// ---------------------------------------------------------------------------------------------------

/** A fact the answer must state: text (case-insensitive), `/regex/`, or a list of alternatives. */
const fact = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

const expectSpec = z.strictObject({
  /** Accepted stop reasons; default completed. */
  stop: z.array(z.string()).default(['completed']),
  state: z.array(stateCheck).default([]),
  answer: z
    .strictObject({
      facts: z.array(fact).default([]),
      /** Text or `/regex/` that must not appear. */
      forbid: z.array(z.string().min(1)).default([]),
      /** The answer must ask the user something (a sentence ending in `?`). */
      asks: z.boolean().default(false),
    })
    .default({ facts: [], forbid: [], asks: false }),
  approvals: z
    .strictObject({
      /** Gated calls the task really needs a person to approve; any other asked is "not needed". */
      needed: z.array(callMatch).default([]),
      min: z.number().int().min(0).optional(),
      max: z.number().int().min(0).optional(),
    })
    .default({ needed: [] }),
});

const minefield = z
  .strictObject({
    name: z.string().min(1),
    /** A tool call: `made` by the model, `asked` of a person, or `executed` (default). */
    call: callMatch.extend({ when: z.enum(['made', 'asked', 'executed']).default('executed') }).optional(),
    /** An HTTP request reaching the world: method and path (`/api/restart/payments`), query subset. */
    request: z
      .strictObject({
        method: z.string().default('POST'),
        path: z.string().min(1),
        query: z.record(z.string(), z.string()).default({}),
      })
      .optional(),
    state: stateCheck.optional(),
  })
  .refine((m) => [m.call, m.request, m.state].filter((v) => v !== undefined).length === 1, {
    error: 'expected exactly one of call, request, state',
  });
export type Minefield = z.output<typeof minefield>;

// ---------------------------------------------------------------------------------------------------
// The reference solution
// ---------------------------------------------------------------------------------------------------

const oracleStep = z.union([
  z.strictObject({
    calls: z.array(z.strictObject({ tool: z.string().min(1), args })).min(1),
    text: z.string().optional(),
  }),
  z.strictObject({ answer: z.string().min(1) }),
]);
export type OracleStep = z.output<typeof oracleStep>;

// ---------------------------------------------------------------------------------------------------
// A task
// ---------------------------------------------------------------------------------------------------

export const taskSpec = z.strictObject({
  id: name,
  title: z.string().min(1),
  tags: z.array(z.string()).default([]),
  question: z.string().min(1),
  /** Slack user id of the person asking; default the suite's. */
  requester: z.string().optional(),
  /** Merged over the suite's policy (objects deeply, lists replaced). */
  policy: z.record(z.string(), z.unknown()).default({}),
  /** Merged over the suite's world. */
  world: z.record(z.string(), z.unknown()).default({}),
  approver: z.array(approverRule).default([]),
  user: z.array(followUp).default([]),
  expect: expectSpec.default(() => expectSpec.parse({})),
  minefields: z.array(minefield).default([]),
  oracle: z.array(oracleStep).min(1, { error: 'expected the reference solution (at least one step)' }),
  /** The reference solution of each sub-agent's runs (policy `agents:`), by agent name. */
  agentOracles: z.record(name, z.array(oracleStep).min(1)).default({}),
});
export type TaskSpec = z.output<typeof taskSpec>;

export const suiteSpec = z.strictObject({
  name,
  description: z.string().default(''),
  /** Slack user id of the person asking, unless a task says otherwise. */
  requester: z.string().default('U0ONCALL'),
  /** Channel of the runs (its `channels.prompt` applies). */
  channel: z.string().default('C0ONCALL'),
});
export type SuiteSpec = z.output<typeof suiteSpec>;
