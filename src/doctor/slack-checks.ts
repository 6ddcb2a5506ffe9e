/**
 * Checks against the real workspace: the bot token (auth.test), the scopes granted to it against what
 * the policy's features need, Socket Mode's app-level token, each configured channel and each approver.
 */
import type { Policy } from '../config/policy.js';
import { type SlackCaller, SlackUnreachable, slackError } from './slack-api.js';
import { type CheckResult, fail, ok, skip, warn } from './types.js';

/** A scope and the feature that needs it. */
interface NeededScope {
  scope: string;
  why: string;
}

/** What loopgate calls for every policy (slack-app-manifest.yaml says why each is there). */
const ALWAYS: readonly NeededScope[] = [
  { scope: 'app_mentions:read', why: 'questions that mention the bot' },
  { scope: 'channels:history', why: 'thread replies in public channels' },
  { scope: 'groups:history', why: 'thread replies in private channels' },
  { scope: 'im:history', why: 'questions in direct messages' },
  { scope: 'chat:write', why: 'progress, approval cards and answers' },
  { scope: 'reactions:write', why: 'the working / done marks on questions' },
  { scope: 'users:read', why: "the requester's time zone and approver checks" },
  { scope: 'channels:read', why: '/loopgate cancel in public channels' },
  { scope: 'groups:read', why: '/loopgate cancel in private channels' },
  { scope: 'commands', why: 'the /loopgate command' },
];

/** Every string under a key named `approvers`, anywhere in the policy (approvals, tools, rules, MCP). */
export function policyApprovers(policy: Policy): string[] {
  const found = new Set<string>();
  const walk = (value: unknown, underApprovers: boolean): void => {
    if (typeof value === 'string') {
      if (underApprovers && /^[UWS][A-Z0-9]{2,}$/.test(value)) found.add(value);
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, underApprovers);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        // An on-call source's schedule names are not Slack ids, whatever they look like.
        if (key !== 'source') walk(item, underApprovers || key === 'approvers');
      }
    }
  };
  walk(policy, false);
  return [...found].sort();
}

/** The channels the policy names: where the bot answers, where post_message writes, channel prompts. */
function policyChannels(policy: Policy): string[] {
  return [
    ...new Set([
      ...policy.channels.allow,
      ...Object.keys(policy.channels.prompt),
      ...(policy.tools.post_message?.channels ?? []),
    ]),
  ].sort();
}

/** Whether any approver list of the policy names an on-call source (its people are found by email). */
const namesOncall = (policy: Policy) => /"provider":"(pagerduty|opsgenie)"/.test(JSON.stringify(policy));

function neededScopes(policy: Policy): NeededScope[] {
  const groups = policyApprovers(policy).filter((id) => id.startsWith('S'));
  return [
    ...ALWAYS,
    ...(groups.length > 0
      ? [{ scope: 'usergroups:read', why: `approver user groups (${groups.join(', ')})` }]
      : []),
    ...(namesOncall(policy)
      ? [{ scope: 'users:read.email', why: 'on-call approvers, found in Slack by their email' }]
      : []),
  ];
}

interface SlackCheckInput {
  policy: Policy;
  slack: SlackCaller;
  /** SLACK_APP_TOKEN: Socket Mode is checked when set. */
  appToken: string | undefined;
}

export async function slackChecks({ policy, slack, appToken }: SlackCheckInput): Promise<CheckResult[]> {
  let auth: Awaited<ReturnType<SlackCaller['call']>>;
  try {
    auth = await slack.call('auth.test');
  } catch (error) {
    if (!(error instanceof SlackUnreachable)) throw error;
    return [fail('slack auth', `${error.message}; check SLACK_API_URL and the network`)];
  }
  if (!auth.body.ok) {
    return [
      fail(
        'slack auth',
        `Slack refused SLACK_BOT_TOKEN (${auth.body.error}): copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page`,
      ),
      skip('slack scopes, channels, approvers', 'not checked: they need a valid SLACK_BOT_TOKEN'),
    ];
  }
  const b = auth.body as Record<string, unknown>;
  const botUserId = String(b.user_id ?? '');
  const results = [
    ok('slack auth', `SLACK_BOT_TOKEN is the bot @${b.user} (${botUserId}) in ${b.team} (${b.team_id})`),
  ];

  const needed = neededScopes(policy);
  if (auth.scopes === null) {
    results.push(warn('slack scopes', 'Slack sent no x-oauth-scopes header; scopes not checked'));
  } else {
    const granted = new Set(auth.scopes);
    const missing = needed.filter((n) => !granted.has(n.scope));
    results.push(
      missing.length === 0
        ? ok('slack scopes', `all ${needed.length} scopes the policy needs are granted`)
        : fail(
            'slack scopes',
            `missing ${missing.map((m) => `${m.scope} (${m.why})`).join(', ')}: add them to the app's bot scopes (slack-app-manifest.yaml lists them) and reinstall the app`,
          ),
    );
  }

  if (appToken !== undefined) results.push(await socketModeCheck(slack, appToken));
  for (const channel of policyChannels(policy)) results.push(await channelCheck(slack, channel, policy));
  for (const id of policyApprovers(policy)) {
    results.push(id.startsWith('S') ? await groupCheck(slack, id) : await userCheck(slack, id));
  }
  return results;
}

async function socketModeCheck(slack: SlackCaller, appToken: string): Promise<CheckResult> {
  const reply = await slack.call('apps.connections.open', {}, appToken);
  return reply.body.ok
    ? ok('slack socket mode', 'SLACK_APP_TOKEN opens a Socket Mode connection')
    : fail(
        'slack socket mode',
        `Slack refused SLACK_APP_TOKEN (${slackError(reply.body)}): an app-level token (xapp-…) with connections:write, from the app's Basic Information page, with Socket Mode turned on`,
      );
}

async function channelCheck(slack: SlackCaller, channel: string, policy: Policy): Promise<CheckResult> {
  const name = `channel ${channel}`;
  const reply = await slack.call('conversations.info', { channel });
  if (!reply.body.ok) {
    if (reply.body.error === 'channel_not_found') {
      return fail(
        name,
        'channel_not_found: no such channel, or a private one the bot is not in; check the id (channel details, bottom of the About tab)',
      );
    }
    return fail(name, slackError(reply.body));
  }
  const info = (reply.body as { channel?: { name?: string; is_member?: boolean } }).channel ?? {};
  const label = info.name ? `#${info.name}` : channel;
  const posts = policy.tools.post_message?.channels.includes(channel) === true;
  if (info.is_member !== true) {
    return fail(
      name,
      `the bot is not a member of ${label}${posts ? ', so post_message cannot write there' : ''}: type /invite @<bot name> in it`,
    );
  }
  return ok(name, `${label} exists and the bot is a member`);
}

async function userCheck(slack: SlackCaller, id: string): Promise<CheckResult> {
  const name = `approver ${id}`;
  const reply = await slack.call('users.info', { user: id });
  if (!reply.body.ok) {
    return fail(
      name,
      reply.body.error === 'user_not_found'
        ? 'user_not_found: no such user in this workspace (profile → ⋮ → Copy member ID gives the U… id)'
        : slackError(reply.body),
    );
  }
  const user = (reply.body as { user?: { name?: string; deleted?: boolean; is_bot?: boolean } }).user ?? {};
  if (user.deleted) return fail(name, `@${user.name} is deactivated: nobody can approve as them`);
  if (user.is_bot) return warn(name, `@${user.name} is a bot: it cannot click Approve`);
  return ok(name, `user @${user.name}`);
}

async function groupCheck(slack: SlackCaller, id: string): Promise<CheckResult> {
  const name = `approver group ${id}`;
  const reply = await slack.call('usergroups.users.list', { usergroup: id });
  if (!reply.body.ok) {
    return fail(
      name,
      reply.body.error === 'no_such_subteam'
        ? 'no_such_subteam: no such user group in this workspace (the group page → ⋮ → Copy group ID gives the S… id)'
        : slackError(reply.body),
    );
  }
  const members = (reply.body as { users?: unknown[] }).users ?? [];
  return members.length === 0
    ? warn(name, 'the user group has no members: nobody can approve through it')
    : ok(name, `user group with ${members.length} member${members.length === 1 ? '' : 's'}`);
}
