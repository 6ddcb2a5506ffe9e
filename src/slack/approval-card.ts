/**
 * The approval card: what a gated call would do, who asked, who may decide and until when, with Approve
 * and Reject buttons whose `value` is only the approval id. After a decision (or expiry, cancel, unknown
 * outcome) the same builder renders the card without decision buttons, to replace it in place.
 */
import { approverMentions } from '../approvers/mentions.js';
import type { ApproverIds, OncallShown } from '../approvers/resolve.js';
import type { CallPlan, GatedCall } from '../loop/gated-calls.js';
import { argsDiff } from './args-diff.js';
import { renderArguments } from './arguments-text.js';
import {
  actions,
  type Button,
  button,
  context,
  header,
  type KnownBlock,
  type SlackMessage,
  section,
} from './block-kit.js';
import { ACTION_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import {
  escapeAndTruncate,
  escapeMrkdwn,
  showInvisible,
  slackDate,
  truncate,
  userMention,
} from './mrkdwn.js';
import { planDiff } from './plan-diff.js';

export type ApprovalStatus =
  | 'pending'
  | 'approved'
  | 'rejected'
  | 'expired'
  | 'cancelled'
  | 'superseded'
  | 'outcome_unknown'
  | 'not_run'
  | 'failed_retryable';

/** What the card shows; built by the caller from the stored approval record. */
export interface ApprovalView {
  approvalId: string;
  runId: string;
  tool: string;
  effect: GatedCall['effect'];
  /** Validated arguments, exactly as they will be executed. */
  args: unknown;
  argsHash: string;
  /** The tool's preview (Markdown from the tool), shown escaped. */
  preview?: string | null;
  /** The tool's plan of the call (what executing would change), or why it could not be computed. */
  plan?: CallPlan;
  /**
   * The call was approved, but its plan changed before it ran: it did not run, and this round asks again.
   * `before`: the plan that was approved (absent: none was shown, e.g. after an edit).
   */
  planChanged?: { before?: CallPlan };
  /** The model's stated reason for the call. */
  reason?: string | null;
  /** Slack user id of the person whose question started the run. */
  requesterId: string;
  /** Who may decide: Slack user ids, user group ids and on-call sources. */
  approvers: ApproverIds;
  /** Who is on call now for each of `approvers.oncall` (resolved when the card is drawn), in order. */
  oncallNow?: readonly OncallShown[];
  /** Epoch ms. */
  expiresAt: number;
  status: ApprovalStatus;
  /** Slack user id of the decider (also of whoever cancelled, when known). */
  decidedBy?: string | null;
  /** Epoch ms. */
  decidedAt?: number | null;
  decisionReason?: string | null;
  /** What came of running the call, when the card reports it (a call approved again). Plain text. */
  outcome?: string | null;
  /** The policy rule that asked for this approval: `rule 2 of run_action (prod restarts)`. */
  rule?: string;
  /** The channel rule that chose who may decide (it replaces the rule's approvers). */
  approversFrom?: string;
  /** Distinct approvals needed (shown when more than 1), and who has approved so far. */
  quorum?: number;
  votes?: readonly string[];
  /** The rule offers "Approve and allow similar calls" (same values of `args`, up to maxMinutes). */
  grantOffer?: { args: readonly string[]; maxMinutes: number };
  /** The approval keeps the tool's schema: approvers may edit the arguments. */
  editable?: boolean;
  /** An approver edited the model's arguments: `args` are the edited ones. */
  edited?: { by: string; originalArgs: unknown };
  /** When escalation added approvers (epoch ms). */
  escalatedAt?: number;
  /**
   * Break glass: `only` (a deny rule decided; Break glass and Reject, no Approve or Edit) or `offered`
   * (Break glass next to Approve, for when a freeze makes such a deny rule decide while the card waits).
   */
  breakGlass?: 'only' | 'offered';
  /** The sub-agent whose run asks for the call, working for the requester (absent: their own run). */
  agent?: string;
  /**
   * The call is in shadow mode: it was not executed and never will be; the card asks what people would
   * decide (Would approve / Would reject) until someone answered.
   */
  shadow?: {
    why: string;
    /** When it was asked (epoch ms), for the time to decide. */
    askedAt: number;
    decided?: { decision: 'would_approve' | 'would_reject'; by: string; at: number };
  };
}

const EFFECT_SENTENCE: Record<GatedCall['effect'], string> = {
  write: 'changes something outside this conversation',
  notify: 'sends a message or alert to people',
};

const HEADER: Record<ApprovalStatus, string> = {
  pending: '✋ Approval needed',
  approved: '✅ Approved',
  rejected: '🚫 Rejected',
  expired: '⌛ Expired',
  cancelled: '✖️ Cancelled',
  superseded: '✏️ Edited',
  outcome_unknown: '⚠️ Outcome unknown',
  not_run: '⏸️ Not run',
  failed_retryable: '⚠️ Failed, not repeated',
};

const FULL_TEXT_BUTTON = 'Full text';
const FENCE = '```';

/** Approvers listed on the card; more are summarised as a count. */
const MAX_LISTED_APPROVERS = 15;
const SECTION_LABEL_ROOM = 40;

function approversText(view: ApprovalView): string {
  const all = approverMentions(view.approvers, view.oncallNow);
  if (all.length === 0) return '_nobody is configured_';
  const listed = all.slice(0, MAX_LISTED_APPROVERS).join(', ');
  const more = all.length - MAX_LISTED_APPROVERS;
  return more > 0 ? `${listed} and ${more} more` : listed;
}

function labelled(label: string, body: string): KnownBlock {
  return section(`*${label}*\n${escapeAndTruncate(body, SLACK_LIMITS.sectionText - SECTION_LABEL_ROOM)}`);
}

const fitsLabelled = (body: string) =>
  escapeMrkdwn(body).length <= SLACK_LIMITS.sectionText - SECTION_LABEL_ROOM;

const REASON_CHARS = 1_500;

/**
 * The model's stated reason as one quoted line of plain text: no bold, code, quotes, links or mentions can
 * imitate the card's own sections, and line breaks and invisible characters are shown, not obeyed.
 */
function reasonBlock(reason: string): KnownBlock {
  const line = truncate(showInvisible(reason).replace(/\n/g, ' ↵ '), REASON_CHARS, '…');
  return {
    type: 'context',
    elements: [
      { type: 'mrkdwn', text: "*Why (the model's words, unchecked):*" },
      { type: 'plain_text', text: `“${line}”`, emoji: false },
    ],
  };
}

function when(epochMs: number | null | undefined): string {
  return epochMs == null ? '' : ` ${slackDate(epochMs)}`;
}

function by(userId: string | null | undefined): string {
  return userId ? ` by ${userMention(userId)}` : '';
}

function reasonLine(reason: string | null | undefined): string {
  return reason ? `\n*Reason:* ${escapeAndTruncate(reason, SLACK_LIMITS.sectionText - 600)}` : '';
}

/** The line that replaces the buttons once the approval left `pending`. */
function decisionText(view: ApprovalView): string {
  const at = when(view.decidedAt);
  switch (view.status) {
    case 'pending':
      return '';
    case 'approved': {
      const votes = view.votes ?? [];
      const who = votes.length > 1 ? ` by ${votes.map(userMention).join(' and ')}` : by(view.decidedBy);
      return `:white_check_mark: *Approved*${who}${at}.${reasonLine(view.decisionReason)}`;
    }
    case 'rejected':
      return `:no_entry_sign: *Rejected*${by(view.decidedBy)}${at}. Nothing was run.${reasonLine(view.decisionReason)}`;
    case 'expired':
      return `:hourglass: *Expired*${when(view.decidedAt ?? view.expiresAt)} without a decision. Nothing was run.`;
    case 'cancelled':
      return `:heavy_multiplication_x: *Cancelled*${by(view.decidedBy)}${at}. Nothing was run.${reasonLine(view.decisionReason)}`;
    case 'superseded':
      return `:pencil2: *Edited*${by(view.decidedBy)}${at}: a new round asks for the edited arguments.`;
    case 'outcome_unknown':
      return (
        `:warning: *Outcome unknown*: it was approved${by(view.decidedBy)}, but the worker stopped while ` +
        `running it${at}. Check whether it took effect before approving it again.`
      );
    case 'not_run':
      return (
        `:warning: *Not run*: it was approved${by(view.decidedBy)}${at}, but Redis could not confirm that ` +
        'the record of it starting reached a replica, so it was not started. Nothing happened; it is safe to approve it again.'
      );
    case 'failed_retryable':
      return (
        `:warning: *Failed*: it was approved${by(view.decidedBy)}${at} and failed with what looks like a ` +
        'passing problem (a timeout or a busy service). It was not repeated automatically because it may ' +
        'not be safe to repeat. Retry runs it once more with the same arguments.'
      );
  }
}

/** Who edited the arguments and what changed against the model's original, one line per path. */
function editedText(edited: NonNullable<ApprovalView['edited']>, args: unknown): Fitted {
  const changes = argsDiff(edited.originalArgs, args);
  const lines = changes.shown.map(
    (d) =>
      `• \`${escapeAndTruncate(d.path, 100)}\`: ${escapeAndTruncate(d.before, 300)} → ${escapeAndTruncate(d.after, 300)}`,
  );
  const cut =
    changes.more > 0 ||
    changes.shown.some((d) => d.path.length > 100 || d.before.length > 300 || d.after.length > 300);
  const more = changes.more > 0 ? `\n… and ${changes.more} more changes` : '';
  const fitted = fitSection(
    `:pencil2: *Edited by ${userMention(edited.by)}*: changes against the model's original:\n${lines.join('\n') || '(none)'}${more}`,
  );
  return { text: fitted.text, cut: cut || fitted.cut };
}

/** What changed since the approval, as a short line diff (both plans whole under Full text). */
function planChangedText(view: ApprovalView): Fitted {
  const before = view.planChanged?.before;
  const head =
    ':warning: *The plan changed* since this call was approved, so it did *not* run. The earlier approval no longer counts: approve again to run it with the plan below.';
  if (!before?.ok || !view.plan?.ok) {
    return fitSection(`${head}\n_No approved plan to compare with (it was edited, or its plan failed)._`);
  }
  const diff = planDiff(before.text, view.plan.text);
  const lines = diff.lines.map((l) => escapeAndTruncate(showInvisible(l), 200, '…'));
  const more = diff.more > 0 ? `\n… and ${diff.more} more changed lines` : '';
  const body = lines.join('\n') || '(only the tool sees a difference)';
  const fitted = fitSection(`${head}\n${FENCE}\n${body}\n${FENCE}${more}`);
  return { text: fitted.text, cut: fitted.cut || diff.more > 0 };
}

/** The plan, or why it could not be computed: a call never runs on a plan nobody was shown. */
function planBlock(plan: CallPlan): KnownBlock {
  if (plan.ok) return labelled('Plan (what it would change now)', showInvisible(plan.text));
  return section(
    `*Plan*: could not be computed (${escapeAndTruncate(plan.error, 1_000, '…')}). Nothing runs on a plan nobody saw: approving asks again with a fresh plan first.`,
  );
}

interface Fitted {
  text: string;
  /** Something was left out: the card points to Full text. */
  cut: boolean;
}

/** Section text cut to Slack's limit (never refused): the redraw of a card must not fail on long content. */
function fitSection(text: string): Fitted {
  if (text.length <= SLACK_LIMITS.sectionText) return { text, cut: false };
  return { text: truncate(text, SLACK_LIMITS.sectionText, '…'), cut: true };
}

/** `*Approvals:* 1 of 2: <@U1> · needs 2 different approvers`. */
function quorumText(view: ApprovalView): string {
  const votes = view.votes ?? [];
  const who = votes.length > 0 ? `: ${votes.map(userMention).join(', ')}` : '';
  return `*Approvals:* ${votes.length} of ${view.quorum}${who} · needs ${view.quorum} different approvers; it runs once the last one approves`;
}

/** The header of a shadow card: nobody can mistake it for a call that runs. */
export const SHADOW_HEADER = '👻 Shadow: this will not run';

function shadowText(shadow: NonNullable<ApprovalView['shadow']>): string {
  const head = `:ghost: *Shadow mode* (${escapeAndTruncate(shadow.why, 300)}): this call was *not executed* and will not run. The agent was told so.`;
  const d = shadow.decided;
  if (!d)
    return `${head}\nWould you approve it? Your answer is only recorded, to measure what people would decide; nothing runs either way.`;
  const verb = d.decision === 'would_approve' ? 'would have approved' : 'would have rejected';
  const after = Math.max(0, Math.round((d.at - shadow.askedAt) / 1000));
  return `${head}\n${userMention(d.by)} *${verb}* it${when(d.at)} (${after} s after it was asked). Nothing ran.`;
}

function buttonsFor(view: ApprovalView, shortened: boolean): Button[] {
  const details = [
    ...(shortened
      ? [button({ actionId: ACTION_IDS.fullText, text: FULL_TEXT_BUTTON, value: view.approvalId })]
      : []),
    button({ actionId: ACTION_IDS.details, text: 'Details', value: view.runId }),
  ];
  if (view.shadow) {
    if (view.shadow.decided) return details;
    return [
      button({ actionId: ACTION_IDS.wouldApprove, text: 'Would approve', value: view.approvalId }),
      button({ actionId: ACTION_IDS.wouldReject, text: 'Would reject', value: view.approvalId }),
      ...details,
    ];
  }
  switch (view.status) {
    case 'pending':
      if (view.breakGlass === 'only') {
        return [
          breakGlassButton(view),
          button({ actionId: ACTION_IDS.reject, text: 'Reject', value: view.approvalId, style: 'danger' }),
          ...details,
        ];
      }
      return [
        button({ actionId: ACTION_IDS.approve, text: 'Approve', value: view.approvalId, style: 'primary' }),
        ...(view.grantOffer && (view.quorum ?? 1) <= 1
          ? [
              button({
                actionId: ACTION_IDS.approveGrant,
                text: 'Approve and allow similar…',
                value: view.approvalId,
              }),
            ]
          : []),
        button({ actionId: ACTION_IDS.reject, text: 'Reject', value: view.approvalId, style: 'danger' }),
        ...(view.editable
          ? [button({ actionId: ACTION_IDS.edit, text: 'Edit', value: view.approvalId })]
          : []),
        ...(view.breakGlass === 'offered' ? [breakGlassButton(view)] : []),
        ...details,
      ];
    case 'outcome_unknown':
    case 'not_run':
      return [
        button({
          actionId: ACTION_IDS.reapprove,
          text: 'Approve again',
          value: view.approvalId,
          confirm: {
            title: 'Run it again?',
            text:
              view.status === 'not_run'
                ? `It did not run before. Approve ${view.tool} again, with the same arguments?`
                : `The first attempt may already have taken effect. Approve ${view.tool} again, with the same arguments?`,
            confirm: 'Approve again',
            deny: 'Not now',
          },
        }),
        ...details,
      ];
    case 'failed_retryable':
      return [
        button({
          actionId: ACTION_IDS.reapprove,
          text: 'Retry',
          value: view.approvalId,
          confirm: {
            title: 'Retry it?',
            text: `The failed attempt may still have taken effect. Run ${view.tool} once more, with the same arguments?`,
            confirm: 'Retry',
            deny: 'Not now',
          },
        }),
        ...details,
      ];
    default:
      return details;
  }
}

const breakGlassButton = (view: ApprovalView) =>
  button({ actionId: ACTION_IDS.breakGlass, text: 'Break glass…', value: view.approvalId });

function fallbackText(view: ApprovalView): string {
  const tool = escapeMrkdwn(view.tool);
  if (view.shadow)
    return `Shadow (will not run): ${tool} (${view.effect}), asked by ${userMention(view.requesterId)}`;
  if (view.status === 'pending') {
    const via = view.agent ? ` through the sub-agent ${escapeMrkdwn(view.agent)}` : '';
    return `Approval needed: ${tool} (${view.effect}), asked by ${userMention(view.requesterId)}${via}`;
  }
  return `${HEADER[view.status].replace(/^\S+ /, '')}: ${tool} (${view.effect})`;
}

/** The header, the shadow note and the tool's effect, which every card opens with. */
function introBlocks(view: ApprovalView): KnownBlock[] {
  return [
    header(view.shadow ? `${SHADOW_HEADER}: ${view.tool}` : `${HEADER[view.status]}: ${view.tool}`),
    ...(view.shadow ? [section(fitSection(shadowText(view.shadow)).text)] : []),
    section(
      `\`${escapeAndTruncate(view.tool, 200, '…')}\` is a *${view.effect}* tool: it ${EFFECT_SENTENCE[view.effect]}.`,
    ),
  ];
}

/** Whether any part of the card shows less than all of its text (the full-text button shows the rest). */
function isShortened(
  view: ApprovalView,
  argsTruncated: boolean,
  edited: Fitted | null,
  changed: Fitted | null,
): boolean {
  return (
    argsTruncated ||
    Boolean(edited?.cut) ||
    Boolean(changed?.cut) ||
    (view.plan?.ok === true && !fitsLabelled(showInvisible(view.plan.text))) ||
    (view.preview != null && !fitsLabelled(showInvisible(view.preview))) ||
    (view.reason != null && showInvisible(view.reason).length > REASON_CHARS)
  );
}

/** Who asked, and who can decide (or answer, for a shadow card) while it is open. */
function askedText(view: ApprovalView): string {
  const via = view.agent ? ` through the sub-agent \`${escapeAndTruncate(view.agent, 100, '…')}\`` : '';
  const asked = `Asked by ${userMention(view.requesterId)}${via}`;
  if (view.shadow) return `${asked}${view.shadow.decided ? '' : ` · Can answer: ${approversText(view)}`}`;
  if (view.status !== 'pending') return asked;
  const escalated = view.escalatedAt ? ' (escalated)' : '';
  return `${asked} · Can decide: ${approversText(view)}${escalated} · Expires ${slackDate(view.expiresAt)}`;
}

/** The notes only a pending card carries: break glass as the only way, and the quorum so far. */
function pendingNotes(view: ApprovalView): KnownBlock[] {
  if (view.status !== 'pending') return [];
  const blocks: KnownBlock[] = [];
  if (view.breakGlass === 'only')
    blocks.push(
      section(
        `:rotating_light: *Denied by ${escapeAndTruncate(view.rule ?? 'a rule', 300)}.* It runs only if one of the people above breaks glass: a reason and an incident reference, posted here and audited for review. The requester cannot.`,
      ),
    );
  if ((view.quorum ?? 1) > 1) blocks.push(section(fitSection(quorumText(view)).text));
  return blocks;
}

/** The card for `view.status`: buttons while pending, the decision afterwards. */
export function approvalCard(view: ApprovalView): SlackMessage {
  const blocks = introBlocks(view);

  // Every budget is the section's limit less its own label, so no content can push a section over it.
  const label = `*Arguments*${view.edited ? ' (as edited)' : ''}\n`;
  const args = renderArguments(view.args, SLACK_LIMITS.sectionText - label.length);
  const edited = view.edited ? editedText(view.edited, view.args) : null;
  const decision = view.status === 'pending' || view.shadow ? null : fitSection(decisionText(view));
  const changed = view.planChanged ? planChangedText(view) : null;
  const shortened = isShortened(view, args.truncated, edited, changed);
  blocks.push(section(`${label}${args.text}`));
  if (edited) blocks.push(section(edited.text));
  if (shortened) {
    blocks.push(
      context(`_Shortened here; every character of it is under *${FULL_TEXT_BUTTON}* below this card._`),
    );
  }
  if (view.reason) blocks.push(reasonBlock(view.reason));
  if (view.preview) blocks.push(labelled('Preview', showInvisible(view.preview)));
  if (changed) blocks.push(section(changed.text));
  if (view.plan) blocks.push(planBlock(view.plan));

  blocks.push(context(askedText(view)));
  const policy = [view.rule, view.approversFrom && `approvers from ${view.approversFrom}`].filter(Boolean);
  if (policy.length > 0) blocks.push(context(`Policy: ${escapeAndTruncate(policy.join(' · '), 300)}`));
  blocks.push(...pendingNotes(view));
  if (decision) blocks.push(section(decision.text));
  if (view.outcome) blocks.push(labelled('Result', view.outcome));
  blocks.push(actions(`loopgate_approval`, buttonsFor(view, shortened)));

  return { text: fallbackText(view), blocks };
}
