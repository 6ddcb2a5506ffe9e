/** `mode: shadow` in the policy: validated with the key's path, and which calls it shadows (precedence). */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { shadowReason } from '../../src/config/shadow-mode.js';

const problems = (yaml: string) => {
  try {
    parsePolicy(yaml, { env: {} });
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.key}: ${p.problem}`);
  }
};

const POLICY = `
approvals: { approvers: [U0LEAD], mode: shadow }
channels: { shadow: [C0TRIAL] }
tools:
  post_message: { channels: [C0OPS], mode: enforce }
  page_oncall: { routingKeyEnv: PD_KEY }
custom:
  - { path: ./scale.ts, name: scale, mode: enforce }
mcp:
  servers:
    deploys:
      command: [./deploys]
      mode: enforce
      tools: { rollback: { mode: shadow } }
`;

describe('shadow mode in the policy', () => {
  it('rejects an unknown mode with the exact key, and a custom mode without the tool name', () => {
    expect(problems('approvals: { mode: dry }')).toEqual(['approvals.mode: expected enforce or shadow']);
    expect(problems('tools:\n  post_message: { channels: [C0OPS], mode: off }')).toEqual([
      'tools.post_message.mode: expected enforce or shadow',
    ]);
    expect(problems('custom:\n  - { path: ./x.ts, mode: shadow }')).toEqual([
      'custom[0].name: mode of a custom tool needs its name (name: <tool name>)',
    ]);
    expect(problems('channels: { shadow: [general] }')).toEqual([
      'channels.shadow[0]: expected a Slack channel id (C…, G… or D…)',
    ]);
  });

  it('a channel in channels.shadow wins; else the tool’s own mode; else approvals.mode', () => {
    const policy = parsePolicy(POLICY, { env: { PD_KEY: 'k' } });
    expect(shadowReason(policy, 'post_message', 'C0TRIAL')).toBe('channel C0TRIAL is in channels.shadow');
    expect(shadowReason(policy, 'post_message', 'C0OPS')).toBeNull();
    expect(shadowReason(policy, 'page_oncall', 'C0OPS')).toBe('approvals.mode is shadow');
    expect(shadowReason(policy, 'scale', 'C0OPS')).toBeNull();
    expect(shadowReason(policy, 'deploys__status', 'C0OPS')).toBeNull();
    expect(shadowReason(policy, 'deploys__rollback', 'C0OPS')).toBe('deploys__rollback has mode: shadow');
    expect(shadowReason(policy, 'constructor', 'C0OPS')).toBe('approvals.mode is shadow');
  });

  it('nothing is shadowed by default', () => {
    const policy = parsePolicy('', { env: {} });
    expect(policy.approvals.mode).toBe('enforce');
    expect(shadowReason(policy, 'post_message', 'C0OPS')).toBeNull();
  });
});
