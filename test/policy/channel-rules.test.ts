import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import {
  type ChannelFacts,
  channelApprovers,
  channelScope,
  channelToolWarnings,
  toolRefusal,
} from '../../src/policy/channel-rules.js';

const rulesOf = (yaml: string) => parsePolicy(yaml, { env: {} }).channels.rules;

const RULES = rulesOf(`
channels:
  rules:
    - name: incidents
      match: { name: "incident-*" }
      approvers: [U0ONCALL]
    - name: dms
      match: { kind: dm }
      readOnly: true
    - match: { id: C0LOCKED }
      tools: [current_time, "prom*"]
`);

const dm: ChannelFacts = { id: 'D0ABC', kind: 'dm' };
const incident: ChannelFacts = { id: 'C0INC', name: 'incident-42', kind: 'public' };

describe('channel rules', () => {
  it('first match wins; no match is unrestricted', () => {
    expect(channelScope(RULES, incident).label).toBe('channel rule 1 (incidents)');
    expect(channelScope(RULES, dm).label).toBe('channel rule 2 (dms)');
    const other = channelScope(RULES, { id: 'C0GEN', name: 'general', kind: 'public' });
    expect(other.label).toBe('no channel rule');
    expect(toolRefusal(other, 'http_request', 'write')).toBeNull();
  });

  it('a DM rule with readOnly: true refuses writes and notifies but offers reads', () => {
    const scope = channelScope(RULES, dm);
    expect(toolRefusal(scope, 'http_request', 'write')).toContain('read-only in this channel');
    expect(toolRefusal(scope, 'post_message', 'notify')).toContain('read-only');
    expect(toolRefusal(scope, 'http_get', 'read')).toBeNull();
    expect(channelApprovers(scope)).toBeNull();
  });

  it('tools lists what is offered, by name or glob', () => {
    const scope = channelScope(RULES, { id: 'C0LOCKED', name: 'locked', kind: 'private' });
    expect(toolRefusal(scope, 'prometheus_query', 'read')).toBeNull();
    expect(toolRefusal(scope, 'current_time', 'read')).toBeNull();
    expect(toolRefusal(scope, 'http_get', 'read')).toContain('not offered in this channel');
  });

  it("an incident channel's approvers replace the tool's", () => {
    const scope = channelScope(RULES, incident);
    expect(toolRefusal(scope, 'http_request', 'write')).toBeNull();
    expect(channelApprovers(scope)).toEqual({ users: ['U0ONCALL'], groups: [] });
  });

  it('unknown facts fail closed: every rule that may match counts, and no writes are offered', () => {
    const scope = channelScope(RULES, { id: 'C0WHO', kind: null });
    expect(scope.failedClosed).toBe(true);
    expect(scope.rules).toEqual([0]);
    expect(toolRefusal(scope, 'http_request', 'write')).toContain('could not be checked');
    expect(toolRefusal(scope, 'http_get', 'read')).toBeNull();
    expect(channelApprovers(scope)).toBeNull();
    // A D… id is a DM whatever Slack says: the DM rule decides with certainty.
    expect(channelScope(RULES, { id: 'D0WHO', kind: null })).toMatchObject({
      rules: [1],
      failedClosed: false,
    });
    // The locked channel's id is known: its tools list applies even unlooked-up, with the name rule's.
    const locked = channelScope(RULES, { id: 'C0LOCKED', kind: null });
    expect(locked.rules).toEqual([0, 2]);
    expect(toolRefusal(locked, 'http_get', 'read')).toContain('not offered');
  });

  it('the policy refuses a rule with an unknown kind or field', () => {
    expect(() => rulesOf('channels:\n  rules:\n    - match: { kind: group }\n')).toThrow(/kind/);
    expect(() => rulesOf('channels:\n  rules:\n    - match: {}\n      offered: [x]\n')).toThrow(/offered/);
  });
});

describe('channel rules naming tools', () => {
  it('warns of patterns that match no tool, but not of one under a configured MCP server', () => {
    const rules = parsePolicy(
      `
approvals: { approvers: [U0MGR] }
channels:
  rules:
    - match: { kind: dm }
      tools: [http_get, "k8s__*", "gh__*", ask_triage]
      readOnly: true
    - match: { name: "incident-*" }
      readOnly: [run_acton, "run_*"]
`,
      { env: {} },
    ).channels.rules;
    expect(channelToolWarnings(rules, ['http_get', 'run_action', 'ask_triage'], ['k8s'])).toEqual([
      {
        key: 'channels.rules[0].tools[2]',
        problem: '"gh__*" matches no tool: the tool it meant is not offered there',
      },
      {
        key: 'channels.rules[1].readOnly[0]',
        problem: '"run_acton" matches no tool: the tool it meant is not made read-only there',
      },
    ]);
  });
});
