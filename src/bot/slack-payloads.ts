/**
 * The fields of Slack's payloads that the bot relies on, validated with zod. Bolt hands listeners loosely
 * typed bodies; each listener parses what it reads here and refuses anything else, so a surprising payload
 * is a logged parse error instead of an `undefined` deep in the logic. Unknown fields are kept (Slack adds
 * fields over time).
 */
import { z } from 'zod';

const id = z.string().min(1);

/** `app_mention` and `message` events (the fields shared by both). */
export const messageEventSchema = z.looseObject({
  type: z.enum(['app_mention', 'message']),
  subtype: z.string().optional(),
  channel: id,
  /** `im`, `channel`, `group`, `mpim`; absent on app_mention. */
  channel_type: z.string().optional(),
  user: z.string().optional(),
  bot_id: z.string().optional(),
  text: z.string().optional(),
  ts: z.string(),
  thread_ts: z.string().optional(),
  /** Present when Slack re-delivers an edited message as an event. */
  edited: z.unknown().optional(),
});
export type MessageEvent = z.infer<typeof messageEventSchema>;

/** The Events API envelope around an event. */
export const eventEnvelopeSchema = z.looseObject({
  /** Unique per event, repeated by Slack's retries: the start job's id. */
  event_id: id,
  team_id: id,
});

export const appHomeOpenedSchema = z.looseObject({
  type: z.literal('app_home_opened'),
  user: id,
  tab: z.string().optional(),
});

/** A button click on a message (`block_actions`). */
export const blockActionSchema = z.looseObject({
  type: z.literal('block_actions'),
  user: z.looseObject({ id }),
  trigger_id: id,
  /** Absent for clicks in App Home or in modals. */
  channel: z.looseObject({ id }).optional(),
  message: z.looseObject({ ts: z.string(), thread_ts: z.string().optional() }).optional(),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional() })).min(1),
  team: z.looseObject({ id }).nullish(),
  /** Set for clicks in a view: App Home (`type: home`) or a modal. */
  view: z.looseObject({ type: z.string() }).optional(),
});
type BlockAction = z.infer<typeof blockActionSchema>;

/** A submitted modal (`view_submission`); the view itself is parsed by its own builder's parser. */
export const viewSubmissionSchema = z.looseObject({
  type: z.literal('view_submission'),
  user: z.looseObject({ id }),
  view: z.unknown(),
});

/** A slash command's form fields. */
export const slashCommandSchema = z.looseObject({
  command: z.string(),
  text: z.string().default(''),
  user_id: id,
  channel_id: id,
  team_id: id,
});
export type SlashCommand = z.infer<typeof slashCommandSchema>;

/** Where a click happened and who clicked: what the server-side checks compare against. */
export interface ClickTarget {
  /** The button's value: an approval id or a run id. */
  value: string;
  userId: string;
  triggerId: string;
  channelId: string | undefined;
  /** ts of the message carrying the button. */
  messageTs: string | undefined;
  /** Thread of that message, for ephemeral replies next to it. */
  threadTs: string | undefined;
  /** The click came from the clicker's App Home (buttons there carry what the cards' carry). */
  fromHome: boolean;
  teamId: string | undefined;
}

export function clickTarget(action: BlockAction): ClickTarget {
  const message = action.message;
  return {
    value: action.actions[0]?.value ?? '',
    userId: action.user.id,
    triggerId: action.trigger_id,
    channelId: action.channel?.id,
    messageTs: message?.ts,
    threadTs: message?.thread_ts ?? message?.ts,
    fromHome: action.view?.type === 'home',
    teamId: action.team?.id ?? undefined,
  };
}

/**
 * `agent_session_stopped`: someone clicked the native stop button of the agent session in a thread.
 * `streaming_message_ts` lists the app's streams Slack stopped (empty when none was active).
 */
export const agentSessionStoppedSchema = z.looseObject({
  type: z.literal('agent_session_stopped'),
  channel: id,
  thread_ts: id,
  user: id,
  streaming_message_ts: z.array(z.string()).default([]),
});
export type AgentSessionStopped = z.infer<typeof agentSessionStoppedSchema>;

/**
 * `assistant_thread_started` and `assistant_thread_context_changed`: someone opened a thread in the app's
 * agent pane (a DM with the app), or looked at another conversation while it is open. `context` names
 * that conversation (empty when they look at none).
 */
export const assistantThreadEventSchema = z.looseObject({
  type: z.enum(['assistant_thread_started', 'assistant_thread_context_changed']),
  assistant_thread: z.looseObject({
    user_id: id,
    channel_id: id,
    thread_ts: id,
    context: z.looseObject({ channel_id: z.string().optional(), team_id: z.string().optional() }).default({}),
  }),
});
export type AssistantThreadEvent = z.infer<typeof assistantThreadEventSchema>;
