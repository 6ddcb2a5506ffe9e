/**
 * Approvers as Slack shows them (mrkdwn mentions), for the approval card and the refusal of a click: the
 * people and groups named, and for each on-call source who is on call now, or that the source could not
 * say and which fallback decides instead. Never "anyone".
 */
import { escapeMrkdwn, mention, userMention } from '../slack/mrkdwn.js';
import { sourceLabel } from './oncall/source.js';
import type { ApproverIds, OncallShown } from './resolve.js';

const ids = (a: { users: readonly string[]; groups: readonly string[] }) => [
  ...a.users.map(userMention),
  ...a.groups.map(mention),
];

function shownText(shown: OncallShown): string {
  if ('onCall' in shown)
    return `${shown.onCall.map(userMention).join(', ')} (on call now: ${escapeMrkdwn(shown.label)})`;
  return `${ids(shown.fallback).join(', ')} (fallback: ${escapeMrkdwn(shown.label)} cannot say who is on call: ${escapeMrkdwn(shown.down)})`;
}

/**
 * One mention per approver. `shown` is the on-call resolved now (resolveOncall, same order as
 * `approvers.oncall`); without it each source is named with its fallback, to be checked at the click.
 */
export function approverMentions(approvers: ApproverIds, shown?: readonly OncallShown[]): string[] {
  const oncall = (approvers.oncall ?? []).map((o, i) => {
    const now = shown?.[i];
    if (now) return shownText(now);
    return `the on-call of ${escapeMrkdwn(sourceLabel(o.source))} (fallback: ${ids(o.fallback).join(', ')})`;
  });
  return [...ids(approvers), ...oncall];
}
