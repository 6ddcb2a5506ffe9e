/**
 * The model-facing schema of `run_action`: `{ action, params }`, where `action` is one of the declared
 * names and `params` is checked against that action's declared parameters (strictly: unknown keys,
 * wrong types, values outside an enum, a pattern or a range are refused before anyone is asked).
 */
import { z } from 'zod';
import type { ActionSettings, ParamSpec } from './action-settings.js';
import { type ParamValue, wholePlaceholder } from './placeholders.js';

function paramSchema(spec: ParamSpec): z.ZodType<ParamValue> {
  switch (spec.type) {
    case 'enum':
      return z.enum(spec.enum as [string, ...string[]]);
    case 'string':
      // Anchored: the whole value must match, not just a part of it.
      return z
        .string()
        .max(spec.maxLength)
        .regex(new RegExp(`^(?:${spec.pattern})$`, 'u'), { error: `must match ${spec.pattern}` });
    case 'integer': {
      let schema = z.number().int();
      if (spec.min !== undefined) schema = schema.min(spec.min);
      if (spec.max !== undefined) schema = schema.max(spec.max);
      return schema;
    }
    case 'boolean':
      return z.boolean();
  }
}

/**
 * The string parameter whose value would start a whole command argument with `-`, if any: such a value
 * could turn into an option of the program (`--output=/etc/passwd`), so it is refused.
 */
export function optionLikeParam(
  action: ActionSettings,
  params: Readonly<Record<string, ParamValue>>,
): string | undefined {
  for (const arg of action.command ?? []) {
    const name = wholePlaceholder(arg);
    const value = name === undefined ? undefined : params[name];
    if (name !== undefined && action.params[name]?.type === 'string' && String(value).startsWith('-'))
      return name;
  }
  return undefined;
}

export function paramsSchema(action: ActionSettings) {
  return z
    .strictObject(
      Object.fromEntries(Object.entries(action.params).map(([name, spec]) => [name, paramSchema(spec)])),
    )
    .superRefine((params, ctx) => {
      const name = optionLikeParam(action, params as Record<string, ParamValue>);
      if (name !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'may not start with "-" (it would read as an option)',
        });
      }
    });
}

/** `payments|search`, `integer 1..10`, `string matching ^[a-z]+$`, `true|false`. */
function describeParam(spec: ParamSpec): string {
  switch (spec.type) {
    case 'enum':
      return spec.enum.join('|');
    case 'string':
      return `string matching ${spec.pattern}`;
    case 'integer':
      return `integer ${spec.min ?? ''}..${spec.max ?? ''}`;
    case 'boolean':
      return 'true|false';
  }
}

/** One line per action for the tool description: `- name(p: type, …): description`. */
export function describeActions(actions: Readonly<Record<string, ActionSettings>>): string {
  return Object.entries(actions)
    .map(([name, action]) => {
      const params = Object.entries(action.params)
        .map(([p, spec]) => `${p}: ${describeParam(spec)}${spec.description ? ` (${spec.description})` : ''}`)
        .join(', ');
      return `- ${name}(${params}): ${action.description}`;
    })
    .join('\n');
}

const paramValue = z.union([z.string(), z.number(), z.boolean()]);

export function runActionParameters(actions: Readonly<Record<string, ActionSettings>>) {
  const names = Object.keys(actions) as [string, ...string[]];
  const schemas = new Map(Object.entries(actions).map(([name, action]) => [name, paramsSchema(action)]));
  return z
    .object({
      action: z.enum(names).describe('Name of the declared action'),
      params: z.record(z.string(), paramValue).default({}).describe('Parameters of that action, by name'),
    })
    .superRefine((args, ctx) => {
      const parsed = schemas.get(args.action)?.safeParse(args.params);
      if (!parsed || parsed.success) return;
      for (const issue of parsed.error.issues) {
        ctx.addIssue({ code: 'custom', path: ['params', ...issue.path], message: issue.message });
      }
    });
}

export type RunActionArgs = z.output<ReturnType<typeof runActionParameters>>;
