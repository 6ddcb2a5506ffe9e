/**
 * How loopgate gates a server's tool: from the policy's overrides, else from the server's annotations
 * with the MCP defaults (`readOnlyHint` defaults to false, so an unannotated tool is a write). Only the
 * policy and `readOnlyHint` count; descriptions, other hints and anything the model says never do.
 */
import type { ToolEffect } from '../loop/tool-contract.js';
import { type McpServerSettings, ownValue } from './settings.js';

interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  title?: string;
}

export interface EffectDecision {
  effect: ToolEffect;
  /** Where the effect came from, as `check-config` and `mcp list` print it. */
  source: 'override' | 'annotation' | 'default';
  why: string;
}

export function decideEffect(
  server: string,
  tool: string,
  annotations: ToolAnnotations | undefined,
  settings: Pick<McpServerSettings, 'effect' | 'trustAnnotations' | 'tools'>,
): EffectDecision {
  const own = ownValue(settings.tools, tool)?.effect;
  if (own) {
    return { effect: own, source: 'override', why: `mcp.servers.${server}.tools.${tool}.effect` };
  }
  if (settings.effect) {
    return { effect: settings.effect, source: 'override', why: `mcp.servers.${server}.effect` };
  }
  if (!settings.trustAnnotations) {
    return { effect: 'write', source: 'override', why: `mcp.servers.${server}.trustAnnotations: false` };
  }
  const hint = annotations?.readOnlyHint;
  if (hint === true) return { effect: 'read', source: 'annotation', why: 'readOnlyHint: true' };
  if (hint === false) return { effect: 'write', source: 'annotation', why: 'readOnlyHint: false' };
  return { effect: 'write', source: 'default', why: 'no readOnlyHint (MCP default: not read-only)' };
}
