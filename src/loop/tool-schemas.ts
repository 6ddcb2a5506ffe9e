import { z } from 'zod';
import type { ToolSchema } from './model-port.js';
import type { AnyTool } from './tool-contract.js';

const cache = new WeakMap<ReadonlyMap<string, AnyTool>, ToolSchema[]>();

/**
 * Keywords zod writes that say nothing the type does not (every prompt of every step pays for them): the
 * safe-integer bounds of `.int()` and `propertyNames: { type: 'string' }` on records (JSON keys are
 * strings). Validation is zod's own, so leaving them out of what the model reads changes nothing enforced.
 */
function withoutNoise(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutNoise);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) continue;
    if (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) continue;
    if (key === 'propertyNames' && JSON.stringify(value) === '{"type":"string"}') continue;
    // `enum` and `const` values are data, not schemas.
    out[key] = key === 'enum' || key === 'const' ? value : withoutNoise(value);
  }
  return out;
}

/** JSON Schema of one tool's parameters, made by zod itself (the input side: defaults are optional). */
export function toolSchema(tool: AnyTool): ToolSchema {
  const { $schema: _ignored, ...parameters } = withoutNoise(
    z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' }),
  ) as Record<string, unknown>;
  return { name: tool.name, description: tool.description, parameters };
}

/** Schemas for a registry, computed once per registry rather than on every step. */
export function toolSchemas(tools: ReadonlyMap<string, AnyTool>): ToolSchema[] {
  let schemas = cache.get(tools);
  if (!schemas) {
    schemas = [...tools.values()].map(toolSchema);
    cache.set(tools, schemas);
  }
  return schemas;
}
