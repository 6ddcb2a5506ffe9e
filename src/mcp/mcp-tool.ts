/**
 * One tool of an MCP server as a loopgate tool (`<server>__<tool>`), behind the same contract as the
 * built-ins: the server's input schema validates the arguments (before any gating), the effect comes from
 * `decideEffect`, the approval card's preview shows the server, the tool, its annotations and its
 * definition version, and an approved call runs only under the definition it was shown with.
 */
import type { AnyTool, ToolContext, ToolEffect } from '../loop/tool-contract.js';
import { ToolError } from '../tools/errors.js';
import { clip, inlineCode } from '../tools/preview-format.js';
import type { CallDefinitions } from './call-definitions.js';
import type { ListedTool } from './connection.js';
import type { EffectDecision } from './effect.js';
import { cancellable, type RunCancelled } from './run-cancelled.js';
import { type CallResult, resultData } from './tool-result.js';

/** Longest server description passed on; the rest is cut (it is untrusted text the model reads). */
export const MAX_DESCRIPTION_CHARS = 1_000;

/** Control, zero-width and bidi characters become spaces: a description cannot hide text. */
const HIDDEN = /[\p{Cc}\u200B-\u200F\u202A-\u202E\u2028\u2029\u2060-\u2064\uFEFF]/gu;

/** The server's description without hidden characters, capped; `(no description)` when empty. */
function describedAs(description: string | undefined): string {
  const plain = (description ?? '').replace(HIDDEN, ' ').trim();
  const capped =
    plain.length <= MAX_DESCRIPTION_CHARS ? plain : `${plain.slice(0, MAX_DESCRIPTION_CHARS - 1)}…`;
  return capped || '(no description)';
}

export function describeTool(server: string, description: string | undefined): string {
  return `[tool of the MCP server ${server}; its description is the server's text] ${describedAs(description)}`;
}

interface McpToolParts {
  server: string;
  listed: ListedTool;
  /** The compiled input schema (zod wrapper around ajv). */
  parameters: AnyTool['parameters'];
  decision: EffectDecision;
  /** This definition's hash (definition.ts). */
  hash: string;
  timeoutMs: number;
  idempotent: boolean;
  /** The server's current hash of this tool, or undefined once it is gone from the list. */
  currentHash(): string | undefined;
  call(args: unknown, signal: AbortSignal, timeoutMs: number): Promise<CallResult>;
  definitions: CallDefinitions;
  /** Whether the run was cancelled; a read in flight is then cancelled on the server too. */
  runCancelled?: RunCancelled;
}

function annotationsText(annotations: Record<string, unknown> | undefined): string {
  const entries = Object.entries(annotations ?? {}).filter(([k]) => k !== 'title');
  if (entries.length === 0) return 'none';
  return entries.map(([k, v]) => `${k}: ${String(JSON.stringify(v)).slice(0, 100)}`).join(', ');
}

function previewText(p: McpToolParts, effect: ToolEffect): string {
  return [
    `**MCP server** ${inlineCode(p.server)} · **tool** ${inlineCode(p.listed.name)}`,
    `**Effect** ${effect} (${p.decision.source}: ${p.decision.why})`,
    `**Annotations (the server's hints)** ${annotationsText(p.listed.annotations)}`,
    `**Definition** ${inlineCode(p.hash.slice(0, 16))}: the call runs only if the server still defines the tool this way`,
    `**The server's description (untrusted; it decides nothing)** ${clip(describedAs(p.listed.description), 300)}`,
  ].join('\n');
}

export function createMcpTool(p: McpToolParts): AnyTool {
  const name = `${p.server}__${p.listed.name}`;
  const changed = () =>
    new ToolError(
      'tool_changed',
      `Not executed: the MCP server ${p.server} changed or removed ${p.listed.name} since this call was ${p.decision.effect === 'read' ? 'made' : 'shown for approval'}; make the call again if it is still needed.`,
    );
  const execute = async (args: unknown, ctx: ToolContext) => {
    if (p.currentHash() !== p.hash) throw changed();
    // Whatever the current definition's effect: a call shown for approval under another definition never
    // runs (a server that re-annotates an approved write as `readOnlyHint: true` must not slip it through).
    const shown = await p.definitions.get(ctx.runId, ctx.toolCallId);
    if (shown !== null && shown !== p.hash) throw changed();
    if (shown === null && p.decision.effect !== 'read') throw changed();
    // A write that was approved runs to its end: cancelling it half-way would leave its outcome unknown.
    const watch =
      p.decision.effect === 'read' && p.runCancelled
        ? cancellable(ctx.signal, ctx.runId, p.runCancelled)
        : undefined;
    try {
      return resultData(await p.call(args, watch?.signal ?? ctx.signal, p.timeoutMs), name);
    } catch (err) {
      if (watch?.cancelledByRun()) {
        throw new ToolError('cancelled', `${name} was stopped on the server because the run was cancelled.`);
      }
      // A write whose server vanished mid-call may have happened: say so, like the ledger does.
      if (err instanceof ToolError && err.code === 'mcp_server_lost' && p.decision.effect !== 'read') {
        throw new ToolError('outcome_unknown', `${err.message}; have a person check before trying again`);
      }
      throw err;
    } finally {
      watch?.stop();
    }
  };
  return {
    name,
    description: describeTool(p.server, p.listed.description),
    parameters: p.parameters,
    effect: p.decision.effect,
    // The engine's timer fires just after the server's own budget, so the SDK's cancel goes out first.
    timeoutMs: p.timeoutMs,
    idempotent: p.idempotent,
    async preview(_args, ctx) {
      await p.definitions.record(ctx.runId, ctx.toolCallId, p.hash);
      return previewText(p, p.decision.effect);
    },
    execute,
  };
}
