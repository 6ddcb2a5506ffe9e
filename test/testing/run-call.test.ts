/** loopgate/testing: one call through validation, the policy gate, preview, execution and verification. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, ToolInputError } from '../../src/public/index.js';
import { runToolCall } from '../../src/public/testing.js';

const executed: unknown[] = [];

const refund = defineTool({
  name: 'issue_refund',
  description: 'Refund part of an order.',
  parameters: z.object({ order: z.string().regex(/^ord_\d+$/), cents: z.number().int().positive() }),
  effect: 'write',
  secrets: ['BILLING_TOKEN'],
  async execute({ order, cents }, ctx) {
    if (order === 'ord_0') throw new ToolInputError('no order ord_0');
    executed.push({ order, cents, key: ctx.idempotencyKey });
    ctx.logger.info({ order }, 'refunded');
    return { refunded: cents, token: ctx.secret('BILLING_TOKEN').length };
  },
  async preview({ order, cents }) {
    return `Refund *${(cents / 100).toFixed(2)} USD* on ${order}`;
  },
  async verify(_args, result) {
    return { ok: result.refunded > 0, summary: `refund of ${result.refunded} recorded` };
  },
});

const POLICY = `
approvals: { approvers: [U0BILLING], trusted: [issue_refund] }
rules:
  issue_refund:
    - name: small
      when: { cents: { lte: 500 } }
      outcome: allow
    - name: huge
      when: { cents: { gt: 100000 } }
      outcome: deny
      reason: Refunds over 1000 USD go through finance.
    - name: large
      when: { cents: { gt: 5000 } }
      outcome: ask
      approvers: [U0LEAD, S0FINANCE]
      quorum: 2
`;

const env = { BILLING_TOKEN: 'billing-token-1' };

describe('runToolCall', () => {
  it('asks the approvers a rule names, shows the preview, and on approval executes and verifies', async () => {
    const report = await runToolCall({
      tool: refund,
      args: { order: 'ord_7', cents: 9000 },
      policy: POLICY,
      env,
    });
    expect(report.gate).toEqual({
      kind: 'ask',
      rule: 'rule 3 of issue_refund (large)',
      approvers: { users: ['U0LEAD'], groups: ['S0FINANCE'] },
      quorum: 2,
    });
    expect(report.preview).toBe('Refund *90.00 USD* on ord_7');
    expect(report.ran).toBe(true);
    expect(report.result).toEqual({ ok: true, data: { refunded: 9000, token: 15 } });
    expect(report.verification).toEqual({ ok: true, summary: 'refund of 9000 recorded' });
    expect(report.logs).toContainEqual(
      expect.objectContaining({ level: 'info', msg: 'refunded', order: 'ord_7', runId: 'test-run' }),
    );
  });

  it("falls back to the tool's approvers when no rule matches, and runs nothing on a rejection", async () => {
    const before = executed.length;
    const report = await runToolCall({
      tool: refund,
      args: '{"order":"ord_7","cents":1000}',
      policy: POLICY,
      env,
      decision: 'reject',
    });
    expect(report.gate).toEqual({
      kind: 'ask',
      rule: null,
      approvers: { users: ['U0BILLING'], groups: [] },
      quorum: 1,
    });
    expect(report.ran).toBe(false);
    expect(executed.length).toBe(before);
  });

  it('runs an allowed call without a card, and refuses a denied one with its reason', async () => {
    const allowed = await runToolCall({
      tool: refund,
      args: { order: 'ord_7', cents: 100 },
      policy: POLICY,
      env,
    });
    expect(allowed).toMatchObject({
      gate: { kind: 'allow', rule: 'rule 1 of issue_refund (small)' },
      ran: true,
    });
    expect(allowed.preview).toBeUndefined();
    const denied = await runToolCall({
      tool: refund,
      args: { order: 'ord_7', cents: 200000 },
      policy: POLICY,
      env,
    });
    expect(denied).toMatchObject({
      gate: {
        kind: 'deny',
        rule: 'rule 2 of issue_refund (huge)',
        reason: 'Refunds over 1000 USD go through finance.',
      },
      ran: false,
    });
  });

  it('refuses arguments the schema rejects, as the model would read it', async () => {
    const report = await runToolCall({
      tool: refund,
      args: { order: 'nope', cents: 5 },
      policy: POLICY,
      env,
    });
    expect(report.ran).toBe(false);
    expect(report.refused).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
    expect(JSON.stringify(report.refused)).toContain('order');
  });

  it("reports a tool's own failure with its code", async () => {
    const report = await runToolCall({
      tool: refund,
      args: { order: 'ord_0', cents: 100 },
      policy: POLICY,
      env,
    });
    expect(report.result).toEqual({ ok: false, error: { code: 'invalid_input', message: 'no order ord_0' } });
    expect(report.verification).toBeNull();
  });

  it('refuses a tool whose declared secret is not given', async () => {
    await expect(
      runToolCall({ tool: refund, args: { order: 'ord_7', cents: 100 }, policy: POLICY }),
    ).rejects.toThrow('issue_refund needs environment variable BILLING_TOKEN');
  });
});

describe('runToolCall: plans', () => {
  /** A scale-up whose dry-run reads the current replica count. */
  const world = { replicas: 3 };
  const ran: number[] = [];
  const scale = defineTool({
    name: 'scale_web',
    description: 'Scale web.',
    parameters: z.object({ to: z.number().int().min(1) }),
    effect: 'write',
    async execute({ to }) {
      ran.push(to);
      return { to };
    },
    async plan({ to }) {
      if (world.replicas < 0) throw new Error('cluster unreachable');
      return `web: ${world.replicas} -> ${to} replicas`;
    },
  });
  const policy = 'approvals: { approvers: [U0SRE] }';

  it('shows the plan the approver sees, and runs when it is the same at execution', async () => {
    world.replicas = 3;
    const report = await runToolCall({ tool: scale, args: { to: 5 }, policy });
    expect(report.plan).toMatchObject({ ok: true, text: 'web: 3 -> 5 replicas' });
    expect(report.ran).toBe(true);
  });

  it('does not run when the plan changed before execution, and reports the new plan', async () => {
    world.replicas = 3;
    ran.length = 0;
    const report = await runToolCall({
      tool: scale,
      args: { to: 5 },
      policy,
      beforeExecution: () => {
        world.replicas = 4;
      },
    });
    expect(report.ran).toBe(false);
    expect(ran).toEqual([]);
    expect(report.planChanged).toMatchObject({ ok: true, text: 'web: 4 -> 5 replicas' });
  });

  it('does not run when the plan fails before execution, with plan_failed', async () => {
    world.replicas = 3;
    const report = await runToolCall({
      tool: scale,
      args: { to: 5 },
      policy,
      beforeExecution: () => {
        world.replicas = -1;
      },
    });
    expect(report.ran).toBe(false);
    expect(report.result).toMatchObject({ ok: false, error: { code: 'plan_failed' } });
    expect(!report.result?.ok && report.result?.error.message).toContain('cluster unreachable');
  });
});
