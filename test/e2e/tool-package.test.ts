/**
 * End to end: a tool package outside loopgate's tree, loaded by real bot and worker processes. The packed
 * loopgate is installed in a copy of examples/tool-package, whose tools are compiled and installed in an
 * operator's project by package name; the policy there lists the package with the fake CRM allowlisted.
 * The model looks a customer up (a read with declared secrets, no card) and changes their plan (a write):
 * the approval card shows the tool's preview, an approver's click runs it once, and its verify reads the
 * change back. The tools import their own copy of loopgate (the packed one), as in a real project.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeCrm, startFakeCrm } from '../../examples/tool-package/test/fake-crm.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { exampleWithPackedLoopgate, type PackedProject, TSC } from '../support/packed-loopgate.js';
import { toolResultsSeen } from './support/deploy-case.js';
import type { Brain } from './support/model-brains.js';
import { wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const TOKEN = 'crm-e2e-token-1234';
let project: PackedProject;
let crm: FakeCrm;
let w: SlackWorld;

beforeAll(async () => {
  project = await exampleWithPackedLoopgate();
  execFileSync(process.execPath, [TSC, '-p', 'tsconfig.build.json'], { cwd: project.dir });
  const ops = join(project.dir, 'ops');
  mkdirSync(join(ops, 'node_modules', '@loopgate-examples'), { recursive: true });
  symlinkSync(project.dir, join(ops, 'node_modules', '@loopgate-examples', 'crm-tools'), 'dir');
  crm = await startFakeCrm(TOKEN);
  w = await startSlackWorld({
    mode: 'split',
    policyDir: ops,
    policyExtra: [
      'custom:',
      '  - package: "@loopgate-examples/crm-tools"',
      `    allow: [{ prefix: "${crm.url}/customers/", allowPrivate: true }]`,
    ],
    workerEnv: { CRM_API_URL: crm.url, CRM_API_TOKEN: TOKEN },
  });
}, 600_000);
afterAll(async () => {
  await w?.close();
  await crm?.close();
  project?.remove();
}, 60_000);

/** Looks the customer up, then asks to change their plan, then answers with what the write returned. */
const upgradeBrain: Brain = ({ toolResults }) => {
  if (toolResults.length === 0) {
    return {
      toolCalls: [{ name: 'lookup_customer', arguments: JSON.stringify({ customerId: 'cus_acme1' }) }],
    };
  }
  if (toolResults.length === 1) {
    const args = { customerId: 'cus_acme1', plan: 'enterprise', reason: 'signed the enterprise deal' };
    return { toolCalls: [{ name: 'change_customer_plan', arguments: JSON.stringify(args) }] };
  }
  return { content: `Done: ${toolResults.at(-1)}` };
};

describe('a tool package in the real bot and worker', { timeout: 90_000 }, () => {
  it('runs the read at once and the write through an approval card with its preview, then verifies it', async () => {
    w.model.brain('upgrade', upgradeBrain);
    const channel = w.newChannel();
    const asked = await w.ask(
      channel,
      PEOPLE.requester,
      w.model.tagged('upgrade', 'move Acme to enterprise'),
    );
    const card = await w.card(asked);
    const words = wordsOf(w.message(card));
    expect(words).toContain('change_customer_plan');
    // The tool's own preview, computed from the CRM through ctx.http with the declared token.
    expect(words).toContain('Change *Acme* (cus_acme1) from *pro* to *enterprise*');
    const [lookedUp] = toolResultsSeen(w, 'upgrade');
    expect(JSON.parse(lookedUp ?? '{}')).toEqual({
      ok: true,
      data: { id: 'cus_acme1', name: 'Acme', plan: 'pro', status: 'active' },
    });
    expect(crm.patches).toEqual([]);

    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    const run = await w.ended(asked.runId);
    expect(run.state.status).toBe('completed');
    expect(crm.customers.get('cus_acme1')?.plan).toBe('enterprise');
    expect(crm.patches).toHaveLength(1);
    expect(crm.patches[0]?.key).toMatch(new RegExp(`^${asked.runId}:`));
    const written = JSON.parse(toolResultsSeen(w, 'upgrade').at(-1) ?? '{}');
    expect(written).toMatchObject({
      ok: true,
      data: { plan: 'enterprise' },
      verification: { ok: true, summary: 'cus_acme1 is on enterprise' },
    });
    // The tool's logger is bound to the run; the declared token never reaches a log line.
    const worker = w.processes.find((p) => p.entry === 'worker');
    expect(worker?.logs()).toContainEqual(
      expect.objectContaining({ msg: 'customer looked up', runId: asked.runId, customerId: 'cus_acme1' }),
    );
    expect(worker?.output()).not.toContain(TOKEN);
  });
});
