import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyWorkDir, runCli } from './cli-harness.js';

const work = emptyWorkDir();
afterAll(() => work.remove());

const POLICY = `
approvals: { approvers: [U0LEAD1] }
freezes:
  weekend: { timeZone: Europe/Berlin, weekly: [{ from: "fri 18:00", to: "mon 08:00" }] }
rules:
  post_message:
    - { name: weekend, when: { freeze: weekend }, outcome: ask, quorum: 2 }
tools:
  post_message: { channels: [C0OPS] }
  current_time:
channels:
  rules:
    - name: incidents
      match: { name: "incident-*" }
      approvers: [U0ONCALL]
    - name: payments
      match: { name: "payments-*" }
      approvers: [{ oncall: { pagerduty: { schedule: P1ABC }, fallback: [S0SRELEADS] } }]
    - name: dms
      match: { kind: dm }
      readOnly: true
`;

const test = (tool: string, extra: string[]) => {
  // The on-call source's token exists (only its name is checked here).
  const path = join(work.dir, 'channels.yaml');
  writeFileSync(path, POLICY);
  return runCli(
    ['policy', 'test', tool, '{}', '--config', path, ...extra],
    { PAGERDUTY_API_TOKEN: 't' },
    work.dir,
  );
};

describe('loopgate policy test --channel', () => {
  it('names the channel rule that decides, with the freeze in force, and its approvers replacing the rule’s', async () => {
    const out = await test('post_message', ['--channel', '#incident-7', '--at', '2026-12-05T12:00Z']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    expect(out.stdout).toContain('at 2026-12-05 12:00:00Z: freezes in force: weekend\n');
    expect(out.stdout).toContain('channel #incident-7 (kind unknown): channel rule 1 (incidents)\n');
    expect(out.stdout).toContain(
      '=> rule 1 of post_message (weekend): asks U0ONCALL; 2 distinct approvals needed',
    );
  });

  it("names the channel's on-call source as the approvers in force", async () => {
    const out = await test('post_message', ['--channel', '#payments-eu', '--at', '2026-12-07T12:00Z']);
    expect(out.stdout).toContain('channel #payments-eu (kind unknown): channel rule 2 (payments)\n');
    expect(out.stdout).toMatch(/=> .*asks .*P1ABC/);
  });

  it('says a tool is not offered in a DM where writes are read-only, and reads stay offered', async () => {
    const dm = await test('post_message', ['--channel', 'dm', '--json']);
    expect(JSON.parse(dm.stdout)).toMatchObject({
      channel: {
        rule: 'channel rule 3 (dms)',
        refused: expect.stringContaining('read-only in this channel'),
      },
    });
    const read = await test('current_time', ['--channel', 'D0ABC']);
    expect(read.stdout).toContain('channel a DM (D0ABC): channel rule 3 (dms)\n');
    expect(read.stdout).not.toContain('not offered');
  });

  it('a channel id alone cannot say its name: rules on names fail closed, as the worker does', async () => {
    const out = await test('post_message', ['--channel', 'C0GENERAL']);
    expect(out.stdout).toContain("the channel's name or kind is unknown");
    expect(out.stdout).toContain('not offered there');
  });

  it('refuses a channel it cannot read, naming --channel', async () => {
    const bad = await test('post_message', ['--channel', 'general']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--channel: expected a channel id, #name or dm: "general"');
  });
});
