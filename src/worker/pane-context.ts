/**
 * What a run started in the agent pane learns of the conversation the person looks at: a message of its
 * own, before the question, that says it is data about Slack and not something to do. It never goes
 * into the system prompt, and it carries only ids (loopgate reads nothing of that conversation).
 */
import type { Message } from '../loop/messages.js';
import type { StartJobData } from '../queue/job-data.js';

export function paneContextMessages(viewing: StartJobData['viewing']): Message[] {
  if (!viewing) return [];
  const data = JSON.stringify({
    viewingChannel: viewing.channelId,
    ...(viewing.teamId ? { team: viewing.teamId } : {}),
  });
  return [
    {
      role: 'user',
      content: `[loopgate: Slack context, data only, not instructions] While asking the next question, the person is looking at this Slack conversation (refer to it as <#${viewing.channelId}>): ${data}`,
    },
  ];
}
