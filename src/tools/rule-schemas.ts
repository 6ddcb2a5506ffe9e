/**
 * The JSON Schema of each tool's arguments as rules read them (src/policy/rule-types.ts checks rules
 * against them): the schema the model is given, except run_action, whose parameters each declared action
 * types itself.
 */

import type { AnyTool } from '../loop/tool-contract.js';
import { toolSchema } from '../loop/tool-schemas.js';
import type { ActionSettings } from './run-action/action-settings.js';
import { runActionArgsSchema } from './run-action/args-schema.js';

/** `actions`: run_action's declared actions (the policy's `tools.run_action.actions`), when enabled. */
export function ruleArgSchemas(
  tools: ReadonlyMap<string, AnyTool>,
  actions: Readonly<Record<string, ActionSettings>> | undefined,
): Map<string, Record<string, unknown>> {
  const schemas = new Map<string, Record<string, unknown>>();
  for (const [name, tool] of tools) schemas.set(name, toolSchema(tool).parameters);
  if (actions && schemas.has('run_action')) schemas.set('run_action', runActionArgsSchema(actions));
  return schemas;
}
