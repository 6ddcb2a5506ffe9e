import { z } from 'zod';
import type { AnyTool, ToolSchema } from './types.js';

const cache = new WeakMap<ReadonlyMap<string, AnyTool>, ToolSchema[]>();

/** JSON Schema of one tool's parameters, made by zod itself (the input side: defaults are optional). */
export function toolSchema(tool: AnyTool): ToolSchema {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, {
    io: 'input',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
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
