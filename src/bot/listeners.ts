/**
 * What the bot listens to, as tables: each Slack event, button and form names the module that handles it.
 * The listeners only parse, hand over and ack (app.ts says when each kind is acked); the logic lives in
 * the modules they call.
 */
import type { App } from '@slack/bolt';
import { ACTION_IDS, CALLBACK_IDS } from '../slack/ids.js';
import { parseGrantRef } from '../store/grants/grant-store.js';
import { assistantThreadContextChanged, assistantThreadStarted } from './agent-pane.js';
import {
  approveClicked,
  decisionNotRecordedText,
  queueResume,
  reapproveClicked,
  rejectClicked,
  rejectSubmitted,
  tellClicker,
  toldWhenNotRecorded,
} from './approvals.js';
import { breakGlassClicked, breakGlassSubmitted } from './break-glass.js';
import { budgetClicked } from './budget-click.js';
import { loopgateCommand, SLASH_COMMAND } from './commands.js';
import type { BotContext } from './context.js';
import { detailsClicked, fullTextClicked } from './details.js';
import { editClicked, editSubmitted } from './edit.js';
import { messageReceived, NotQueuedError } from './events.js';
import { feedbackClicked, feedbackSubmitted } from './feedback.js';
import { grantClicked, grantSubmitted, revokeGrant } from './grants.js';
import { homeOpened } from './home.js';
import { noticeModal } from './notice-modal.js';
import { sessionStopped } from './session-stop.js';
import { wouldApproveClicked, wouldRejectClicked } from './shadow.js';
import {
  agentSessionStoppedSchema,
  appHomeOpenedSchema,
  assistantThreadEventSchema,
  blockActionSchema,
  type ClickTarget,
  clickTarget,
  eventEnvelopeSchema,
  messageEventSchema,
  slashCommandSchema,
  viewSubmissionSchema,
} from './slack-payloads.js';

export function registerListeners(app: App, ctx: BotContext, queueDeadlineMs?: number): void {
  app.error(async (error) => {
    // Bolt passes errors that carry a `code` (every LoopgateError) through as they are.
    if (error instanceof NotQueuedError) {
      ctx.logger.warn(
        { err: error.cause ?? error, eventId: error.eventId },
        'event not acked: its start job could not be queued (Slack will deliver it again)',
      );
    } else {
      ctx.logger.error({ err: error, code: error.code }, 'a Slack request failed');
    }
    // Rethrown so that a request not yet answered gets a 500.
    throw error;
  });
  registerEvents(app, ctx, queueDeadlineMs);
  registerClicks(app, ctx);
  registerForms(app, ctx);
  app.command(SLASH_COMMAND, async ({ ack, body }) => {
    const command = slashCommandSchema.parse(body);
    try {
      await ack(await loopgateCommand(ctx, command));
    } catch (error) {
      ctx.logger.error({ err: error, text: command.text, user: command.user_id }, 'slash command failed');
      await ack({ response_type: 'ephemeral', text: 'Something went wrong on my side; please try again.' });
    }
  });
}

/** Events are awaited: acked once handled, left unacked (for Slack to redeliver) when Redis fails. */
function registerEvents(app: App, ctx: BotContext, queueDeadlineMs?: number): void {
  const onMessage = async (args: {
    body: unknown;
    event: unknown;
    context: { botUserId?: string; retryNum?: number };
  }) => {
    const envelope = eventEnvelopeSchema.parse(args.body);
    const event = messageEventSchema.safeParse(args.event);
    if (!event.success) {
      ctx.logger.warn(
        { eventId: envelope.event_id, problem: event.error.message },
        'unreadable message event',
      );
      return;
    }
    const botUserId = args.context.botUserId;
    if (!botUserId) throw new Error('the bot user id is unknown (auth.test did not answer)');
    await messageReceived(
      ctx,
      {
        event: event.data,
        eventId: envelope.event_id,
        teamId: envelope.team_id,
        botUserId,
        retryNum: args.context.retryNum,
      },
      queueDeadlineMs,
    );
  };
  app.event('app_mention', onMessage);
  app.event('message', onMessage);

  app.event('agent_session_stopped', async ({ body, event, context }) => {
    const envelope = eventEnvelopeSchema.parse(body);
    const stopped = agentSessionStoppedSchema.safeParse(event);
    if (!stopped.success) {
      ctx.logger.warn(
        { eventId: envelope.event_id, problem: stopped.error.message },
        'unreadable stop event',
      );
      return;
    }
    await sessionStopped(ctx, {
      event: stopped.data,
      eventId: envelope.event_id,
      teamId: envelope.team_id,
      retryNum: context.retryNum,
    });
  });

  const onPaneEvent =
    (handle: typeof assistantThreadStarted) =>
    async ({ body, event }: { body: unknown; event: unknown }) => {
      const envelope = eventEnvelopeSchema.parse(body);
      const parsed = assistantThreadEventSchema.safeParse(event);
      if (!parsed.success) {
        ctx.logger.warn(
          { eventId: envelope.event_id, problem: parsed.error.message },
          'unreadable agent pane event',
        );
        return;
      }
      await handle(ctx, parsed.data, envelope.team_id);
    };
  app.event('assistant_thread_started', onPaneEvent(assistantThreadStarted));
  app.event('assistant_thread_context_changed', onPaneEvent(assistantThreadContextChanged));

  app.event('app_home_opened', async ({ body, event }) => {
    const envelope = eventEnvelopeSchema.parse(body);
    const opened = appHomeOpenedSchema.parse(event);
    if (opened.tab !== undefined && opened.tab !== 'home') return;
    ctx.background.run('publish App Home', () => homeOpened(ctx, envelope.team_id, opened.user), {
      user: opened.user,
    });
  });
}

type ClickHandler = (ctx: BotContext, target: ClickTarget) => Promise<void>;

const teller = (c: BotContext, target: ClickTarget) => (text: string) => tellClicker(c, target, text);

/** Each button: the label its background task is logged under, and its handler. */
const CLICKS: readonly (readonly [actionId: string, label: string, handle: ClickHandler])[] = [
  [ACTION_IDS.approve, 'approve click', toldWhenNotRecorded(approveClicked)],
  [ACTION_IDS.reject, 'reject click', toldWhenNotRecorded(rejectClicked)],
  [ACTION_IDS.breakGlass, 'break-glass click', toldWhenNotRecorded(breakGlassClicked)],
  [ACTION_IDS.reapprove, 'approve-again click', toldWhenNotRecorded(reapproveClicked)],
  [ACTION_IDS.wouldApprove, 'would-approve click', toldWhenNotRecorded(wouldApproveClicked)],
  [ACTION_IDS.wouldReject, 'would-reject click', toldWhenNotRecorded(wouldRejectClicked)],
  [ACTION_IDS.edit, 'edit click', (c, target) => editClicked(c, target, teller(c, target))],
  [ACTION_IDS.approveGrant, 'grant click', (c, target) => grantClicked(c, target, teller(c, target))],
  [
    ACTION_IDS.revokeGrant,
    'revoke grant click',
    async (c, target) => {
      // From App Home the home is published again, the answer at its top and the grant gone.
      const text = await revokeGrant(c, await c.store.grants.get(target.value), target.userId);
      const teamId = target.teamId ?? parseGrantRef(target.value)?.teamId;
      await tellClicker(c, { ...target, ...(teamId ? { teamId } : {}) }, text);
    },
  ],
  [
    ACTION_IDS.budgetContinue,
    'budget continue click',
    toldWhenNotRecorded((c, t) => budgetClicked(c, t, 'granted')),
  ],
  [ACTION_IDS.budgetStop, 'budget stop click', toldWhenNotRecorded((c, t) => budgetClicked(c, t, 'refused'))],
  [ACTION_IDS.details, 'details click', detailsClicked],
  [ACTION_IDS.fullText, 'full text click', fullTextClicked],
  [
    ACTION_IDS.feedback,
    'feedback click',
    async (c, target) => {
      await feedbackClicked(c, target);
    },
  ],
];

/** Clicks are acked first thing; the work runs as a tracked background task. */
function registerClicks(app: App, ctx: BotContext): void {
  for (const [actionId, label, handle] of CLICKS) {
    app.action(actionId, async ({ ack, body }) => {
      await ack();
      const target = clickTarget(blockActionSchema.parse(body));
      ctx.background.run(label, () => handle(ctx, target), { user: target.userId, value: target.value });
    });
  }
}

/** A form's answer: accepted (null), field errors shown in the form, or a notice replacing the form. */
type FormAnswer = null | string | { errors: Record<string, string> } | { notice: string };

interface Form {
  callbackId: string;
  /** The notice modal's title. */
  title: string;
  /** The log line when submitting failed. */
  failure: string;
  submit: (ctx: BotContext, userId: string, view: unknown) => Promise<FormAnswer>;
  /** What the person is told when submitting failed. Default: the decision was not recorded. */
  notRecorded?: (error: unknown) => string;
}

const FORMS: readonly Form[] = [
  {
    callbackId: CALLBACK_IDS.feedbackComment,
    title: 'Feedback',
    failure: 'feedback comment not recorded',
    submit: feedbackSubmitted,
    notRecorded: () => 'Your comment could not be recorded; please try again.',
  },
  {
    callbackId: CALLBACK_IDS.rejectReason,
    title: 'Reject',
    failure: 'rejection not recorded',
    submit: rejectSubmitted,
  },
  {
    callbackId: CALLBACK_IDS.breakGlass,
    title: 'Break glass',
    failure: 'break glass not recorded',
    submit: breakGlassSubmitted,
  },
  {
    callbackId: CALLBACK_IDS.grant,
    title: 'Approve and allow',
    failure: 'grant approval not recorded',
    submit: grantSubmitted,
  },
  {
    callbackId: CALLBACK_IDS.edit,
    title: 'Edit',
    failure: 'edit not recorded',
    submit: (ctx, userId, view) =>
      editSubmitted(ctx, userId, view, (record, decider) => queueResume(ctx, record, decider)),
  },
];

/** Forms are acked once their answer is known: field errors stay in the form, a notice replaces it. */
function registerForms(app: App, ctx: BotContext): void {
  for (const form of FORMS) {
    app.view(form.callbackId, async ({ ack, body }) => {
      const submission = viewSubmissionSchema.parse(body);
      const answer = await form.submit(ctx, submission.user.id, submission.view).catch((error: unknown) => {
        ctx.logger.error({ err: error, user: submission.user.id }, form.failure);
        return (form.notRecorded ?? decisionNotRecordedText)(error);
      });
      if (answer === null) await ack();
      else if (typeof answer === 'object' && 'errors' in answer)
        await ack({ response_action: 'errors', errors: answer.errors });
      else {
        const notice = typeof answer === 'string' ? answer : answer.notice;
        await ack({ response_action: 'update', view: noticeModal(form.title, notice) });
      }
    });
  }
}
