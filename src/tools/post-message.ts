/**
 * notify `post_message`: post a message to one of the allowlisted Slack channels, after approval. Slack is
 * reached through the injected `SlackPoster` port, so this module knows nothing of the Slack SDK.
 */
import { z } from 'zod';
import { toolApprovers } from '../approvers/approvers.js';
import { defineTool } from '../loop/define-tool.js';
import type { AnyTool } from '../loop/tool-contract.js';
import type { SlackPoster } from './ports.js';
import { toolMode } from './settings.js';

export const postMessageSettings = z.strictObject({
  channels: z
    .array(z.string().regex(/^[CG][A-Z0-9]{2,}$/, { error: 'expected a Slack channel id (C… or G…)' }))
    .min(1, { error: 'expected at least one Slack channel id' }),
  maxChars: z.number().int().min(100).max(12_000).default(4000),
  approvers: toolApprovers.optional(),
  /** `shadow`: calls are shown for decision but never run (docs/approvals.md, "Shadow mode"). */
  mode: toolMode.optional(),
});

type PostMessageSettings = z.output<typeof postMessageSettings>;

/** The message as the approver will see it posted: the channel, then the text as a quote. */
function previewOf(channel: string, text: string): string {
  const quoted = text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return `**Post in <#${channel}>:**\n${quoted}`;
}

export function createPostMessage(settings: PostMessageSettings, deps: { slack: SlackPoster }): AnyTool {
  const [first, ...rest] = settings.channels as [string, ...string[]];
  return defineTool({
    name: 'post_message',
    description:
      'Post a message (Slack mrkdwn) to one of these Slack channels: ' +
      `${settings.channels.join(', ')}, for updates other people must see. Your answer in the current ` +
      'thread needs no tool.',
    parameters: z.object({
      channel: z.enum([first, ...rest]).describe('Channel id'),
      text: z.string().trim().min(1).max(settings.maxChars).describe('The message, in Slack mrkdwn'),
    }),
    effect: 'notify',
    async preview({ channel, text }) {
      return previewOf(channel, text);
    },
    async execute({ channel, text }) {
      const posted = await deps.slack.postMessage(channel, text);
      return { channel, ts: posted.ts, ...(posted.permalink ? { permalink: posted.permalink } : {}) };
    },
  });
}
