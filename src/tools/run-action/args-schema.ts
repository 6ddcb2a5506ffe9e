/**
 * The JSON Schema of run_action's arguments as the declared actions make them: the tool's own zod
 * schema takes any `params` (each action checks its own), so rule checks (src/policy/rule-types.ts)
 * read the parameter types from here.
 */
import type { ActionSettings, ParamSpec } from './action-settings.js';

function paramSchema(spec: ParamSpec): Record<string, unknown> {
  if (spec.type === 'enum') return { type: 'string', enum: spec.enum };
  return { type: spec.type };
}

export function runActionArgsSchema(
  actions: Readonly<Record<string, ActionSettings>>,
): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      action: { type: 'string', enum: Object.keys(actions) },
      params: {
        anyOf: Object.values(actions).map((action) => ({
          type: 'object',
          properties: Object.fromEntries(Object.entries(action.params).map(([k, s]) => [k, paramSchema(s)])),
          additionalProperties: false,
        })),
      },
    },
    additionalProperties: false,
  };
}
