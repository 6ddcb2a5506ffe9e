/**
 * The JSON Schema of each tool's arguments as rules read them (src/policy/rule-types.ts checks rules
 * against them): the schema the model is given, except run_action, whose parameters each declared action
 * types itself.
 */
import type { Policy } from '../config/policy.js';
import { toolSchema } from '../loop/tool-schemas.js';
import type { AnyTool } from '../loop/types.js';
import { runActionArgsSchema } from './run-action/args-schema.js';

export function ruleArgSchemas(
  policy: Pick<Policy, 'tools'>,
  tools: ReadonlyMap<string, AnyTool>,
): Map<string, Record<string, unknown>> {
  const schemas = new Map<string, Record<string, unknown>>();
  for (const [name, tool] of tools) schemas.set(name, toolSchema(tool).parameters);
  const actions = policy.tools.run_action?.actions;
  if (actions && schemas.has('run_action')) schemas.set('run_action', runActionArgsSchema(actions));
  return schemas;
}
