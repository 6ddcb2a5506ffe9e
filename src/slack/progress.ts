/**
 * What the placeholder message says while a run works: the current step in words ("Querying
 * Prometheus…"), derived from the tool names of that step.
 */
import { context, type SlackMessage } from './block-kit.js';
import { escapeAndTruncate } from './mrkdwn.js';

/** Shown while the model is thinking (before it asks for tools, and between steps). */
export const THINKING_TEXT = 'Thinking…';

/** Shown while a run waits for a decision on its approval cards. */
export const AWAITING_APPROVAL_TEXT = 'Waiting for approval…';

/** Progress wording of the built-in tools; others get `Running <tool>…`. */
const TOOL_PROGRESS: Readonly<Record<string, string>> = {
  prometheus_query: 'Querying Prometheus…',
  search_runbooks: 'Searching the runbooks…',
  http_get: 'Fetching a page…',
  http_request: 'Sending an HTTP request…',
  post_message: 'Posting a message…',
  page_oncall: 'Paging on-call…',
  run_action: 'Running an action…',
};

/** Shown while a run waits for the sub-agents it asked (in parallel when several). */
export function askingText(agents: readonly string[]): string {
  return [...new Set(agents)].map((agent) => `Asking ${agent}…`).join(' · ');
}

/** A sub-agent's progress, shown in its parent's placeholder. */
export function subagentProgressText(agent: string, text: string): string {
  return `${agent} (sub-agent): ${text}`;
}

/** One line for the tools a step runs (in parallel when several); duplicates are named once. */
export function progressText(
  tools: readonly string[],
  labels: Readonly<Record<string, string>> = TOOL_PROGRESS,
): string {
  const unique = [...new Set(tools)];
  if (unique.length === 0) return THINKING_TEXT;
  return unique.map((tool) => labels[tool] ?? `Running ${tool}…`).join(' · ');
}

/** The placeholder message, edited in place as the run moves on. */
export function placeholderMessage(text: string): SlackMessage {
  const line = `:hourglass_flowing_sand: ${escapeAndTruncate(text, 1_500)}`;
  return { text: line, blocks: [context(line)] };
}
