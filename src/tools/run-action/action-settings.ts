/**
 * `tools.run_action.actions`: what the operator allows the model to do, each action a name, a
 * description, typed parameters and one template (an HTTP call or a command), optionally a verify step.
 */
import { z } from 'zod';
import { toolApprovers } from '../../approvers/approvers.js';
import { envVarName, headersEnv, seconds, toolMode } from '../settings.js';
import { placeholdersIn, placeholdersInJson } from './placeholders.js';

const description = z.string().max(500).optional();

const enumParam = z.strictObject({
  type: z.literal('enum'),
  enum: z
    .array(z.string().min(1), { error: 'expected a list of allowed values' })
    .min(1, { error: 'expected at least one allowed value' }),
  description,
});

const stringParam = z.strictObject({
  type: z.literal('string'),
  pattern: z
    .string({ error: 'expected a regular expression every value must match (required for strings)' })
    .refine(
      (p) => {
        try {
          new RegExp(p, 'u');
          return true;
        } catch {
          return false;
        }
      },
      { error: 'expected a valid regular expression' },
    ),
  maxLength: z.number().int().min(1).max(1000).default(200),
  description,
});

const integerParam = z
  .strictObject({
    type: z.literal('integer'),
    min: z.number().int().optional(),
    max: z.number().int().optional(),
    description,
  })
  .refine((p) => p.min === undefined || p.max === undefined || p.min <= p.max, {
    error: 'expected min <= max',
  });

const booleanParam = z.strictObject({ type: z.literal('boolean'), description });

/** `{ enum: [...] }` may leave out `type: enum`. */
const paramSpec = z.preprocess(
  (spec) =>
    spec !== null && typeof spec === 'object' && !('type' in spec) && 'enum' in spec
      ? { type: 'enum', ...spec }
      : spec,
  z.discriminatedUnion('type', [enumParam, stringParam, integerParam, booleanParam], {
    error: 'expected { enum: [...] } or type string (with pattern), integer (min, max) or boolean',
  }),
);

export type ParamSpec = z.output<typeof paramSpec>;

/** Scheme, host and port are fixed by the operator: a placeholder may only appear after them. */
const FIXED_ORIGIN = /^https?:\/\/[^/{}?#]+\//;

const urlTemplate = z
  .string({ error: 'expected an http(s) URL template' })
  .refine((t) => FIXED_ORIGIN.test(t) && URL.canParse(t.replaceAll(/[{}]/g, '')), {
    error:
      'expected an http(s) URL template with a fixed scheme, host and port (placeholders only after the first /)',
  });

const httpTemplate = z.strictObject({
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
  url: urlTemplate,
  headersEnv: headersEnv.default({}),
  body: z.json().optional(),
});

const commandTemplate = z
  .array(z.string(), { error: 'expected the command as a list: program, then arguments' })
  .min(1, { error: 'expected at least the program' })
  .refine((argv) => placeholdersIn(argv[0] ?? '').length === 0, {
    error: 'the program (first element) cannot contain placeholders',
  });

/**
 * The variables a command gets besides PATH, each read from the worker's environment at start-up:
 * `{ CHILD_VAR: HOST_VAR }`. Nothing else of the worker's environment (Slack and OpenAI keys, other
 * actions' secrets) reaches the command.
 */
const envFromEnv = z.record(envVarName, envVarName, {
  error: "expected a map of the command's variable name to the environment variable it is read from",
});

const verifyStep = z.strictObject({
  http_get: urlTemplate,
  attempts: z.number().int().min(1).max(10).default(1),
  intervalSeconds: z.number().min(0).max(300).default(5),
  timeoutSeconds: seconds(120).default(10),
});

/**
 * How to compute what the action would change now, read-only: a dry-run command (`kubectl diff`,
 * `terraform plan`) whose standard output is the plan, or a request whose 2xx body is. Filled from the
 * same validated parameters as the action, under the same rules (no shell; a fixed scheme, host and
 * port). Shown on the card and computed again before execution (docs/tools.md, "Plans").
 */
const planStep = z
  .strictObject({
    command: commandTemplate.optional(),
    http: z
      .strictObject({
        method: z.enum(['GET', 'POST'], { error: 'expected GET or POST: a plan changes nothing' }),
        url: urlTemplate,
        headersEnv: headersEnv.default({}),
        body: z.json().optional(),
      })
      .optional(),
    /** Exit codes of the command that mean "here is the plan" (`kubectl diff` exits 1 on a difference). */
    exitCodes: z.array(z.number().int().min(0).max(255)).min(1).default([0]),
    timeoutSeconds: seconds(600).default(60),
  })
  .refine((p) => (p.command === undefined) !== (p.http === undefined), {
    error: 'expected exactly one of command or http',
  });

export type PlanStep = z.output<typeof planStep>;

const actionSettings = z
  .strictObject({
    description: z.string({ error: 'expected a description the model reads' }).min(1).max(1000),
    params: z
      .record(
        z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected a parameter name (letters, digits, _)' }),
        paramSpec,
      )
      .default({}),
    http: httpTemplate.optional(),
    command: commandTemplate.optional(),
    envFromEnv: envFromEnv.default({}),
    timeoutSeconds: seconds(3600).default(60),
    verify: verifyStep.optional(),
    plan: planStep.optional(),
  })
  .superRefine((action, ctx) => {
    if ((action.http === undefined) === (action.command === undefined)) {
      ctx.addIssue({ code: 'custom', path: [], message: 'expected exactly one of http or command' });
    }
    if (action.command === undefined && Object.keys(action.envFromEnv).length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['envFromEnv'],
        message: 'only a command action gets an environment',
      });
    }
    const declared = new Set(Object.keys(action.params));
    const check = (found: string[], path: PropertyKey[]) => {
      for (const name of found) {
        if (!declared.has(name))
          ctx.addIssue({ code: 'custom', path, message: `unknown placeholder {${name}}: not in params` });
      }
    };
    if (action.http) {
      check(placeholdersIn(action.http.url), ['http', 'url']);
      check(placeholdersInJson(action.http.body), ['http', 'body']);
    }
    action.command?.forEach((arg, i) => {
      check(placeholdersIn(arg), ['command', i]);
    });
    if (action.verify) check(placeholdersIn(action.verify.http_get), ['verify', 'http_get']);
    if (action.plan?.http) {
      check(placeholdersIn(action.plan.http.url), ['plan', 'http', 'url']);
      check(placeholdersInJson(action.plan.http.body), ['plan', 'http', 'body']);
    }
    action.plan?.command?.forEach((arg, i) => {
      check(placeholdersIn(arg), ['plan', 'command', i]);
    });
  });

export type ActionSettings = z.output<typeof actionSettings>;

export const runActionSettings = z.strictObject({
  actions: z
    .record(
      z
        .string()
        .regex(/^[a-z][a-z0-9_]{0,63}$/, { error: 'expected an action name (lower case, digits, _)' }),
      actionSettings,
    )
    .refine((actions) => Object.keys(actions).length > 0, { error: 'expected at least one action' }),
  approvers: toolApprovers.optional(),
  /** `shadow`: calls are shown for decision but never run (docs/approvals.md, "Shadow mode"). */
  mode: toolMode.optional(),
});

export type RunActionSettings = z.output<typeof runActionSettings>;
