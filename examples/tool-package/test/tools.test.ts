// The package's tools through loopgate/testing: loopgate's own argument checks, policy gate, preview,
// execution and verification, against a local fake CRM. No Slack, Redis or model.
import { runToolCall } from 'loopgate/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changePlan, lookupCustomer } from '../src/index.js';
import { type FakeCrm, startFakeCrm } from './fake-crm.js';

const TOKEN = 'crm-test-token-1';
let crm: FakeCrm;
let env: Record<string, string>;
let allow: unknown[];

beforeAll(async () => {
  crm = await startFakeCrm(TOKEN);
  env = { CRM_API_URL: crm.url, CRM_API_TOKEN: TOKEN };
  // The fake CRM listens on 127.0.0.1: the operator must say allowPrivate for it.
  allow = [{ prefix: `${crm.url}/customers/`, allowPrivate: true }];
});
afterAll(() => crm.close());

const POLICY = `
approvals: { approvers: [U0SUPPORT] }
rules:
  change_customer_plan:
    - name: enterprise deals
      when: { plan: enterprise }
      outcome: ask
      approvers: [S0SALESLEADS]
`;

describe('lookup_customer', () => {
  it('reads the customer with the declared token, without asking anyone', async () => {
    const report = await runToolCall({ tool: lookupCustomer, args: { customerId: 'cus_acme1' }, env, allow });
    expect(report.gate).toBeNull();
    expect(report.result).toEqual({
      ok: true,
      data: { id: 'cus_acme1', name: 'Acme', plan: 'pro', status: 'active' },
    });
  });

  it('tells the model an unknown id is its mistake', async () => {
    const report = await runToolCall({ tool: lookupCustomer, args: { customerId: 'cus_nobody' }, env, allow });
    expect(report.result).toEqual({ ok: false, error: { code: 'invalid_input', message: 'no customer cus_nobody' } });
  });

  it('refuses a malformed id before any request', async () => {
    const report = await runToolCall({ tool: lookupCustomer, args: { customerId: 'acme' }, env, allow });
    expect(report.refused).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
    expect(report.ran).toBe(false);
  });

  it('cannot reach a URL the operator did not allow', async () => {
    const report = await runToolCall({ tool: lookupCustomer, args: { customerId: 'cus_acme1' }, env, allow: [] });
    expect(report.result).toMatchObject({ ok: false, error: { code: 'url_not_allowed' } });
  });
});

describe('change_customer_plan', () => {
  it('asks the sales leads for an enterprise plan, previews the change, and verifies it after approval', async () => {
    const report = await runToolCall({
      tool: changePlan,
      args: { customerId: 'cus_acme1', plan: 'enterprise', reason: 'signed the enterprise deal' },
      policy: POLICY,
      env,
      allow,
    });
    expect(report.gate).toEqual({
      kind: 'ask',
      rule: 'rule 1 of change_customer_plan (enterprise deals)',
      approvers: { users: [], groups: ['S0SALESLEADS'] },
      quorum: 1,
    });
    expect(report.preview).toBe('Change *Acme* (cus_acme1) from *pro* to *enterprise*\n> signed the enterprise deal');
    expect(report.result).toMatchObject({ ok: true, data: { plan: 'enterprise' } });
    expect(report.verification).toEqual({ ok: true, summary: 'cus_acme1 is on enterprise' });
    expect(crm.patches.at(-1)).toEqual({ id: 'cus_acme1', key: 'test-run:call-1' });
  });

  it('asks the default approvers otherwise, and changes nothing when they reject', async () => {
    const before = crm.patches.length;
    const report = await runToolCall({
      tool: changePlan,
      args: { customerId: 'cus_acme1', plan: 'free', reason: 'churned' },
      policy: POLICY,
      env,
      allow,
      decision: 'reject',
    });
    expect(report.gate).toMatchObject({ kind: 'ask', rule: null, approvers: { users: ['U0SUPPORT'], groups: [] } });
    expect(report.ran).toBe(false);
    expect(crm.patches.length).toBe(before);
  });

  it('reports a write the CRM acknowledged but did not apply', async () => {
    crm.dropNextPatch = true;
    const report = await runToolCall({
      tool: changePlan,
      args: { customerId: 'cus_acme1', plan: 'pro', reason: 'downgrade requested' },
      policy: POLICY,
      env,
      allow,
    });
    expect(report.result).toMatchObject({ ok: true });
    expect(report.verification).toEqual({ ok: false, summary: 'cus_acme1 is still on enterprise, not pro' });
  });
});
