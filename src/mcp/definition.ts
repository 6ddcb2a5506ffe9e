/**
 * A tool's definition version: what a person approved a call of. The hash covers the name, the input
 * schema and the annotations (what gating and the arguments' meaning depend on), not the description.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../loop/hash.js';

interface ToolDefinition {
  name: string;
  inputSchema: unknown;
  annotations?: unknown;
}

export function definitionHash(tool: ToolDefinition): string {
  return createHash('sha256')
    .update(
      canonicalJson({
        name: tool.name,
        inputSchema: tool.inputSchema,
        annotations: tool.annotations ?? null,
      }),
    )
    .digest('hex');
}

/** The version of a whole list: the hashes of its tools, in name order. */
export function listVersion(hashes: readonly string[]): string {
  return createHash('sha256')
    .update([...hashes].sort().join('\n'))
    .digest('hex')
    .slice(0, 16);
}
