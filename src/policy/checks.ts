/**
 * Checks of `rules:` and `approvals.trusted` against the rest of the policy, once each section is valid
 * on its own: every tool named must be a write or notify tool this policy enables (built-in, a custom
 * tool given its `name`, or `<server>__<tool>` of a configured MCP server that may serve writes), and an
 * `allow` rule is accepted only for a tool the operator listed in `approvals.trusted`.
 */
import type { ConfigProblem } from '../config/errors.js';
import { type McpSettings, ownValue, resolveMcpTool } from '../mcp/settings.js';
import type { RulesSection } from './rules.js';

interface RuleCheckInput {
  rules: RulesSection;
  trusted: readonly string[];
  /** Built-in write/notify tool keys the policy enables, and the built-in read ones. */
  gatedBuiltIns: readonly string[];
  readBuiltIns: readonly string[];
  /** Names given to custom tools (`custom: [{ path, name }]`). */
  customNames: readonly string[];
  mcp: McpSettings | undefined;
  /** The defaults an ask rule falls back on. */
  approvals: { escalateTo?: readonly unknown[]; escalateAfterMinutes?: number; expiresAfterMinutes: number };
}

/** Why `tool` cannot carry rules, or null when it is a gated tool of this policy. */
function toolProblem(tool: string, input: RuleCheckInput): string | null {
  if (input.gatedBuiltIns.includes(tool) || input.customNames.includes(tool)) return null;
  if (input.readBuiltIns.includes(tool)) {
    return 'is a read tool: it runs without approval, so rules do not apply to it';
  }
  // Resolved against the configured servers like the tools themselves (server `db_` owns `db___x`).
  const resolved = resolveMcpTool(input.mcp, tool);
  if (resolved) {
    const own = ownValue(resolved.settings.tools, resolved.tool);
    if ((own?.effect ?? resolved.settings.effect) === 'read')
      return 'is made a read tool in mcp.servers: rules do not apply';
    return null;
  }
  const at = tool.indexOf('__');
  if (at > 0) return `names MCP server ${tool.slice(0, at)}, which mcp.servers does not configure`;
  const custom =
    input.customNames.length > 0 ? `, custom tools by their name (${input.customNames.join(', ')})` : '';
  const builtIn = input.gatedBuiltIns.length > 0 ? input.gatedBuiltIns.join(', ') : 'none enabled';
  return `unknown tool: rules apply to the enabled write and notify tools (built-in: ${builtIn}${custom}, MCP tools as <server>__<tool>); a custom tool needs name: in its custom entry`;
}

export function ruleProblems(input: RuleCheckInput): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [tool, rules] of Object.entries(input.rules)) {
    const problem = toolProblem(tool, input);
    if (problem) {
      problems.push({ key: `rules.${tool}`, problem });
      continue;
    }
    rules.forEach((rule, i) => {
      if (rule.outcome === 'allow' && !input.trusted.includes(tool)) {
        problems.push({
          key: `rules.${tool}[${i}].outcome`,
          problem: `allow runs ${tool} calls without a person: list ${tool} in approvals.trusted to accept it`,
        });
      }
      if (rule.outcome !== 'ask') return;
      const a = input.approvals;
      const to = rule.escalateTo ?? a.escalateTo;
      const after = rule.escalateAfterMinutes ?? a.escalateAfterMinutes;
      if ((to === undefined) !== (after === undefined)) {
        problems.push({
          key: `rules.${tool}[${i}].${to === undefined ? 'escalateTo' : 'escalateAfterMinutes'}`,
          problem: 'required: escalateTo and escalateAfterMinutes go together (here or under approvals)',
        });
      }
      const expires = rule.expiresAfterMinutes ?? a.expiresAfterMinutes;
      if (after !== undefined && to !== undefined && after >= expires) {
        problems.push({
          key: `rules.${tool}[${i}].escalateAfterMinutes`,
          problem: `escalation after ${after} min comes after the approval expires (${expires} min)`,
        });
      }
    });
  }
  input.trusted.forEach((tool, i) => {
    const problem = toolProblem(tool, input);
    if (problem) problems.push({ key: `approvals.trusted[${i}]`, problem: `${tool} ${problem}` });
  });
  return problems;
}

/** Rules naming a freeze the `freezes:` section does not define (a typo would make the rule never hold). */
export function freezeProblems(rules: RulesSection, defined: readonly string[]): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [tool, list] of Object.entries(rules)) {
    list.forEach((rule, i) => {
      for (const name of rule.freeze?.names ?? []) {
        if (defined.includes(name)) continue;
        const known = defined.length > 0 ? `defined: ${defined.join(', ')}` : 'freezes: defines none';
        problems.push({
          key: `rules.${tool}[${i}].when.freeze`,
          problem: `unknown freeze ${name} (${known})`,
        });
      }
    });
  }
  return problems;
}
