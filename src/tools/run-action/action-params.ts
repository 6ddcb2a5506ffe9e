/**
 * The model-facing schema of `run_action`: `{ action, params }`, where `action` is one of the declared
 * names and `params` is checked against that action's declared parameters (strictly: unknown keys,
 * wrong types, values outside an enum, a pattern or a range are refused before anyone is asked).
 */
import { z } from 'zod';
import type { ActionSettings, ParamSpec } from './action-settings.js';
import { fill, isDotSegment, type ParamValue, pathOfUrlTemplate, placeholdersIn } from './placeholders.js';

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

/** A parameter whose value is refused where it lands in a template, and why (read by the model). */
interface RefusedParam {
  name: string;
  problem: string;
}

const OPTION_LIKE = 'may not start a command argument with "-" (it would read as an option)';
const DOT_SEGMENT = 'may not make a URL path segment "." or ".." (it would walk out of the declared path)';

/** The placeholder responsible for what a filled template part starts with: the first non-empty one. */
function leadingParam(template: string, params: Readonly<Record<string, ParamValue>>): string | undefined {
  return placeholdersIn(template).find((name) => String(params[name] ?? '') !== '');
}

/**
 * Command arguments that a value would start with `-` (any type: `-9` too), so that it could turn into
 * an option of the program (`--output=/etc/passwd`). An argument the template itself starts with `-`
 * (`--count={n}`) is the operator's option and stays allowed.
 */
function optionLikeParams(action: ActionSettings, params: Readonly<Record<string, ParamValue>>): string[] {
  return (action.command ?? []).flatMap((arg) => {
    if (arg.startsWith('-') || !fill(arg, params).startsWith('-')) return [];
    return leadingParam(arg, params) ?? [];
  });
}

/**
 * URL path segments that values would turn into `.` or `..`: percent-encoding leaves dots alone, and URL
 * resolution would then drop or climb segments (`/api/services/../restart` is `/api/restart`).
 */
function dotSegmentParams(action: ActionSettings, params: Readonly<Record<string, ParamValue>>): string[] {
  const templates = [action.http?.url, action.verify?.http_get].filter((t) => t !== undefined);
  return templates.flatMap((template) =>
    pathOfUrlTemplate(template)
      .split('/')
      .flatMap((segment) => {
        if (placeholdersIn(segment).length === 0) return [];
        if (!isDotSegment(fill(segment, params, encodeURIComponent))) return [];
        return leadingParam(segment, params) ?? placeholdersIn(segment)[0] ?? [];
      }),
  );
}

/** Every parameter refused by where it lands: as an option of a command, or as a dot segment of a URL. */
export function refusedParams(
  action: ActionSettings,
  params: Readonly<Record<string, ParamValue>>,
): RefusedParam[] {
  const unique = (names: string[]) => [...new Set(names)];
  return [
    ...unique(optionLikeParams(action, params)).map((name) => ({ name, problem: OPTION_LIKE })),
    ...unique(dotSegmentParams(action, params)).map((name) => ({ name, problem: DOT_SEGMENT })),
  ];
}

function paramsSchema(action: ActionSettings) {
  return z
    .strictObject(
      Object.fromEntries(Object.entries(action.params).map(([name, spec]) => [name, paramSchema(spec)])),
    )
    .superRefine((params, ctx) => {
      for (const { name, problem } of refusedParams(action, params as Record<string, ParamValue>)) {
        ctx.addIssue({ code: 'custom', path: [name], message: problem });
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
