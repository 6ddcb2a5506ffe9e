/**
 * Grants through the real bot: `/loopgate grants` lists those in force in the channel and the caller's;
 * only the grantor or an approver of the call it was granted with may revoke one; App Home lists the
 * viewer's grants with Revoke, and that button revokes it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Grant } from '../../src/policy/grants.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { grantRef } from '../../src/store/grants/grant-store.js';
import { blockActionsPayload, interactivityBody } from '../fakes/slack-signing.js';
import {
  type BotFixture,
  CHANNEL,
  GROUP,
  GROUPIE,
  MANAGER,
  STRANGER,
  startBotFixture,
} from './bot-fixture.js';

let fx: BotFixture;
let grant: Grant;
beforeEach(async () => {
  fx = await startBotFixture();
  const now = Date.now();
  grant = await fx.store.grants.create({
    tool: 'post_message',
    rule: 'rule 2 of post_message (incident updates)',
    values: { channel: 'C0INCIDENTS' },
    scope: 'thread',
    runId: 'r-granted',
    teamId: fx.id.teamId,
    channelId: CHANNEL,
    threadTs: '1767000000.000100',
    grantedBy: MANAGER,
    grantedAt: now,
    expiresAt: now + 3_600_000,
    approvalId: 'r-granted.0123456789abcdef',
    approvers: { users: [MANAGER], groups: [GROUP] },
  });
});
afterEach(async () => {
  await fx.cleanup();
});

const slash = async (user: string, text: string) =>
  ((await (await fx.command(user, text)).json()) as { text: string }).text;

describe('grants', () => {
  it('lists grants in the channel; a stranger cannot revoke, an approver of the call can', async () => {
    const listed = await slash(STRANGER, 'grants');
    expect(listed).toContain(
      `\`${grant.grantId}\` · \`post_message\` with channel = "C0INCIDENTS" in this thread`,
    );
    expect(listed).toContain(`granted by <@${MANAGER}>`);
    expect(await slash(STRANGER, `grants revoke ${grant.grantId}`)).toBe(
      'You cannot revoke that grant, or it does not exist.',
    );
    expect(await fx.store.grants.get(grantRef(grant))).not.toBeNull();
    expect(await slash(GROUPIE, `grants revoke ${grant.grantId}`)).toContain(
      `Revoked grant \`${grant.grantId}\``,
    );
    expect(await fx.store.grants.get(grantRef(grant))).toBeNull();
    expect(await slash(GROUPIE, 'grants')).toBe(
      'No grants are in force in this channel, and you have made none.',
    );
    const audit = (await fx.store.audit.recent(5)).map((a) => [
      a.entry.event,
      a.entry.decider,
      a.entry.grantId,
    ]);
    expect(audit).toEqual([
      ['grant_revoked', GROUPIE, grant.grantId],
      ['grant', MANAGER, grant.grantId],
    ]);
  });

  it("App Home lists the grantor's grants with Revoke, and the button revokes it", async () => {
    await fx.sendEvent({ type: 'app_home_opened', user: MANAGER, tab: 'home', channel: 'D0HOME' });
    await fx.bot.idle();
    const home = JSON.stringify(fx.fake.home(MANAGER));
    expect(home).toContain('Your grants* (1)');
    expect(home).toContain(grantRef(grant));
    const payload = {
      ...blockActionsPayload(fx.id, {
        user: MANAGER,
        channel: 'D0HOME',
        messageTs: '1.1',
        action: { actionId: ACTION_IDS.revokeGrant, value: grantRef(grant) },
      }),
      container: { type: 'view', view_id: 'V0HOME' },
      view: { type: 'home', id: 'V0HOME' },
      channel: undefined,
      message: undefined,
    };
    expect((await fx.post(interactivityBody(payload))).status).toBe(200);
    await fx.bot.idle();
    expect(await fx.store.grants.get(grantRef(grant))).toBeNull();
    const after = JSON.stringify(fx.fake.home(MANAGER));
    expect(after).toContain(`Revoked grant`);
    expect(after).toContain('Your grants* (0)');
  });
});
