/**
 * Per-channel permissions (`channels.rules`, docs/approvals.md "Per-channel permissions"): which tools a
 * run asked from a channel is offered, which of them may only read there, and whose approval its gated
 * calls need. Rules are tried in order; the first whose `match` fits the channel decides; no match leaves
 * the run unrestricted. Pure: the channel's facts (name, kind) come from src/slack/channel-facts.ts.
 *
 * Facts that could not be looked up fail closed: every rule that could match them is taken into account,
 * a tool is offered only when all of them (and, if no rule might match, the unrestricted default) offer it,
 * and no write or notify tool is offered at all, so which people would approve never has to be guessed.
 */
import { z } from 'zod';
import { type ApproverEntry, type Approvers, parseApprovers, toolApprovers } from '../approvers/approvers.js';
import { globMatch } from './conditions.js';

export const CHANNEL_KINDS = ['dm', 'mpim', 'private', 'public'] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

const toolPatterns = z.array(z.string().min(1, { error: 'expected a tool name or glob such as "k8s__*"' }));

const channelRule = z.strictObject({
  /** A label for explanations; default `channel rule <n>`. */
  name: z.string().min(1).max(100).optional(),
  /** Every given field must fit; an empty match fits every channel. */
  match: z.strictObject({
    id: z
      .string()
      .regex(/^[CGD][A-Z0-9]{2,}$/, { error: 'expected a Slack channel id (C…, G… or D…)' })
      .optional(),
    /** A glob on the channel's name without `#` (`incident-*`). DMs have no name. */
    name: z.string().min(1).optional(),
    kind: z.enum(CHANNEL_KINDS, { error: `expected one of ${CHANNEL_KINDS.join(', ')}` }).optional(),
  }),
  /** Tools offered there (names or globs); absent: every tool. */
  tools: toolPatterns.optional(),
  /** Tools that may only read there (their write and notify calls are not offered); true: all of them. */
  readOnly: z.union([z.literal(true), toolPatterns]).optional(),
  /** Who approves the gated calls asked from there, replacing the tool's or argument rule's approvers. */
  approvers: toolApprovers.optional(),
});

export const channelRulesSection = z.array(channelRule).default([]);
export type ChannelRule = z.output<typeof channelRule>;

/** What is known of a channel: its id always; name and kind when Slack told (null: lookup failed). */
export interface ChannelFacts {
  id: string;
  name?: string;
  kind: ChannelKind | null;
}

/** The kinds a channel id can be when Slack could not say: D is always a DM; C and G may be several. */
function possibleKinds(facts: ChannelFacts): readonly ChannelKind[] {
  if (facts.kind !== null) return [facts.kind];
  if (facts.id.startsWith('D')) return ['dm'];
  if (facts.id.startsWith('G')) return ['private', 'mpim'];
  return ['public', 'private'];
}

type Fit = 'fits' | 'misses' | 'maybe';

function fitOf(rule: ChannelRule, facts: ChannelFacts): Fit {
  const { id, name, kind } = rule.match;
  if (id !== undefined && id !== facts.id) return 'misses';
  let fit: Fit = 'fits';
  if (kind !== undefined) {
    const kinds = possibleKinds(facts);
    if (!kinds.includes(kind)) return 'misses';
    if (kinds.length > 1) fit = 'maybe';
  }
  if (name !== undefined) {
    if (facts.kind === 'dm' || facts.id.startsWith('D')) return 'misses';
    if (facts.name === undefined) fit = 'maybe';
    else if (!globMatch(name, facts.name)) return 'misses';
  }
  return fit;
}

const channelRuleLabel = (rule: ChannelRule, index: number) =>
  `channel rule ${index + 1}${rule.name ? ` (${rule.name})` : ''}`;

/** The channel's verdict for one run: the rule(s) in force and what they allow. */
export interface ChannelScope {
  /** Who decided, as people read it: `channel rule 2 (incidents)`, `no channel rule`, or the fail-closed note. */
  label: string;
  /** Indexes of the rules taken into account (one, or several when the facts were unknown). */
  rules: readonly number[];
  /** The rules in force (same order as `rules`); empty: unrestricted. */
  inForce: readonly ChannelRule[];
  /** True when the facts were unknown and the scope is the most restrictive that can apply. */
  failedClosed: boolean;
}

/** The scope of `facts` under `rules`: first match wins; unknown facts fail closed (module comment). */
export function channelScope(rules: readonly ChannelRule[], facts: ChannelFacts): ChannelScope {
  const candidates: number[] = [];
  let certain = false;
  for (const [index, rule] of rules.entries()) {
    const fit = fitOf(rule, facts);
    if (fit === 'misses') continue;
    candidates.push(index);
    if (fit === 'fits') {
      certain = true;
      break;
    }
  }
  const inForce = candidates.map((i) => rules[i] as ChannelRule);
  if (candidates.length === 0) return { label: 'no channel rule', rules: [], inForce, failedClosed: false };
  if (candidates.length === 1 && certain) {
    return {
      label: channelRuleLabel(inForce[0] as ChannelRule, candidates[0] as number),
      rules: candidates,
      inForce,
      failedClosed: false,
    };
  }
  const labels = candidates.map((i) => channelRuleLabel(rules[i] as ChannelRule, i)).join(', ');
  return {
    label: `the channel's name or kind is unknown (Slack did not say): the strictest of ${labels}${certain ? '' : ' and no rule'}, with no writes`,
    rules: candidates,
    inForce,
    failedClosed: true,
  };
}

const anyMatch = (patterns: readonly string[], tool: string) => patterns.some((p) => globMatch(p, tool));

/**
 * Why `tool` (of `effect`) is not offered in the channel, as the model reads it, or null: it is offered.
 * `ask_<agent>` tools follow the same rules as any tool.
 */
export function toolRefusal(scope: ChannelScope, tool: string, effect: string): string | null {
  const gated = effect !== 'read';
  if (scope.failedClosed && gated)
    return `${tool} changes things, and this channel's permissions could not be checked, so no writes are offered here now`;
  for (const rule of scope.inForce) {
    if (rule.tools && !anyMatch(rule.tools, tool)) return `${tool} is not offered in this channel`;
    if (gated && (rule.readOnly === true || (rule.readOnly && anyMatch(rule.readOnly, tool))))
      return `${tool} is read-only in this channel: its changes and notifications are not offered here`;
  }
  return null;
}

/** The approvers the channel sets for its gated calls (they replace the tool's or rule's), or null. */
export function channelApprovers(scope: ChannelScope): Approvers | null {
  if (scope.failedClosed) return null;
  const entries: readonly ApproverEntry[] | undefined = scope.inForce[0]?.approvers;
  return entries ? parseApprovers(entries) : null;
}

/** The channel in words for explanations: `#incident-42 (public, C0123)`, `a DM (D0123)`. */
export function channelText(facts: ChannelFacts): string {
  if (facts.kind === 'dm') return `a DM (${facts.id})`;
  const name = facts.name ? `#${facts.name} ` : '';
  return `${name}(${facts.kind ?? 'kind unknown'}, ${facts.id})`;
}

/** `decision` with the channel's approvers in place of the tool's or the rule's, when the channel sets them. */
export function withChannelApprovers<D extends { kind: string }>(decision: D, scope: ChannelScope | null): D {
  const approvers = scope ? channelApprovers(scope) : null;
  if (decision.kind !== 'ask' || approvers === null) return decision;
  // Only an ask (src/policy/gate.ts's AskDecision) names approvers; typed loosely to keep gate.ts out.
  return { ...decision, approvers, approversFrom: scope?.label };
}

/**
 * Channel rules naming tools that do not exist (tool names known when the process starts: built-in,
 * custom, sub-agents' `ask_<agent>` and MCP tools listed so far). A typo in `tools` withholds the tool
 * meant; one in `readOnly` leaves it writable. A pattern under a configured MCP server is not warned
 * about: that server may list the tool later.
 */
export function channelToolWarnings(
  rules: readonly ChannelRule[],
  toolNames: readonly string[],
  mcpServers: readonly string[],
): { key: string; problem: string }[] {
  const laterMcp = (p: string) => mcpServers.some((server) => p.startsWith(`${server}__`));
  const unmatched = (p: string) => !toolNames.some((tool) => globMatch(p, tool)) && !laterMcp(p);
  return rules.flatMap((rule, i) => [
    ...(rule.tools ?? []).flatMap((p, j) =>
      unmatched(p)
        ? [
            {
              key: `channels.rules[${i}].tools[${j}]`,
              problem: `"${p}" matches no tool: the tool it meant is not offered there`,
            },
          ]
        : [],
    ),
    ...(Array.isArray(rule.readOnly) ? rule.readOnly : []).flatMap((p, j) =>
      unmatched(p)
        ? [
            {
              key: `channels.rules[${i}].readOnly[${j}]`,
              problem: `"${p}" matches no tool: the tool it meant is not made read-only there`,
            },
          ]
        : [],
    ),
  ]);
}
