import { allActions } from './delegate.js';
import type { ActionRecord } from './gated-calls.js';
import type { RunState } from './run-state.js';

/** Slack's `markdown` block holds at most 12,000 characters. */
const SLACK_MARKDOWN_LIMIT = 12_000;

/**
 * Splits text into parts of at most `limit` characters, preferring paragraph, then line, then word
 * boundaries, and never leaving a code fence open across parts.
 */
export function splitAnswer(text: string, limit = SLACK_MARKDOWN_LIMIT): string[] {
  const parts: string[] = [];
  let rest = text;
  let reopenFence = '';
  while (rest.length > 0) {
    const budget = limit - reopenFence.length - 4; // room to close a fence
    if (reopenFence.length + rest.length <= limit) {
      parts.push(reopenFence + rest);
      break;
    }
    let cut = rest.lastIndexOf('\n\n', budget);
    if (cut < budget / 2) cut = rest.lastIndexOf('\n', budget);
    if (cut < budget / 2) cut = rest.lastIndexOf(' ', budget);
    if (cut < budget / 2) cut = budget;
    // Never between the two halves of a surrogate pair (an emoji or other astral character).
    if (/[\uD800-\uDBFF]/.test(rest.charAt(cut - 1))) cut -= 1;
    let part = reopenFence + rest.slice(0, cut);
    rest = rest.slice(cut).replace(/^\n+/, '');
    const fences = part.match(/^```.*$/gm) ?? [];
    if (fences.length % 2 === 1) {
      part += '\n```';
      reopenFence = `${fences[fences.length - 1]}\n`;
    } else {
      reopenFence = '';
    }
    parts.push(part);
  }
  return parts;
}

const NEGATION =
  /\b(not|never|no|rejected|declined|denied|failed|fail|expired|unknown|unable|cannot|could not|did not|was not|wasn't|didn't|couldn't|won't|pending|awaiting|waiting|unclear|uncertain|may or may not|cancel(?:l)?ed)\b|n't\b/i;

/** Verbs in past tense that a completion claim for a tool would use, derived from its name. */
function claimStems(action: ActionRecord): string[] {
  const words = action.tool.split(/[_\W]+/).filter((w) => w.length > 2);
  const stems = new Set<string>();
  for (const w of words) {
    const lower = w.toLowerCase();
    stems.add(lower.endsWith('e') ? `${lower}d` : `${lower}ed`);
  }
  for (const extra of SPECIAL_STEMS[action.tool] ?? []) stems.add(extra);
  return [...stems];
}

const SPECIAL_STEMS: Record<string, string[]> = {
  post_message: ['posted', 'sent', 'announced'],
  page_oncall: ['paged', 'triggered', 'alerted', 'notified'],
  http_request: ['sent', 'called', 'requested', 'updated', 'deleted', 'created'],
  run_action: ['ran', 'executed', 'restarted', 'rolled back', 'scaled', 'deployed'],
};

/**
 * Heuristic check that the answer does not present an action that did not succeed as done: a sentence
 * with a past-tense verb for that tool and no word of doubt or failure is flagged. It errs towards
 * flagging; a flagged answer goes back to the model with the list of what really happened.
 */
function claimsOfUndoneActions(answer: string, actions: readonly ActionRecord[]): ActionRecord[] {
  const undone = actions.filter((a) => a.outcome !== 'succeeded');
  if (undone.length === 0) return [];
  const sentences = answer.split(/(?<=[.!?])\s+|\n+/);
  return undone.filter((action) => {
    const stems = claimStems(action);
    return sentences.some((s) => {
      const lower = s.toLowerCase();
      const mentions = stems.some((stem) => new RegExp(`\\b${stem}\\b`).test(lower));
      return mentions && !NEGATION.test(lower);
    });
  });
}

const GENERIC_VERBS = [
  'happen',
  'run',
  'go through',
  'proceed',
  'take effect',
  'execute',
  'start',
  'apply',
  'be done',
];
const WAITING = [
  /\b(once|when|after|as soon as)\b[^.!?]*\b(approv|decid|sign)/i,
  /\b(pending|awaiting|waiting for)\s+(an?\s+|your\s+|their\s+)?(approval|decision|sign-off)/i,
];
const NOT_FUTURE = /\b(not|never|no longer|won't|didn't|wasn't)\b/i;
/** "Ask me again when the lead can approve it": an invitation to the person, not a promise. */
const INVITATION = /\b(ask|request|try)\b[^.!?]*\bagain\b/i;

/** Base forms of the verbs a sentence about `action` would use: `restart` from `restarted`, `post`. */
function verbStems(action: ActionRecord): string[] {
  const words = action.tool.split(/[_\W]+/).filter((w) => w.length > 2);
  const special = (SPECIAL_STEMS[action.tool] ?? []).map((w) => w.replace(/e?d$/, ''));
  return [...words, ...special, ...GENERIC_VERBS].map((w) => w.toLowerCase().replace(/[^a-z ]/g, ''));
}

/**
 * Sentences that present an action nobody approved (it expired, was rejected or cancelled) as still to
 * come: "The restart will run once approved", "I'll restart it later", "It is pending approval". Nothing
 * waits any more, so such a sentence is false. Heuristic like `claimsOfUndoneActions`: a sentence with
 * "will/'ll/going to" followed closely by an action verb of the tool (or happen, run, go through…), or one
 * that makes the action wait for an approval, and no negation, is flagged.
 */
export function promisesOfUndecidedActions(answer: string, actions: readonly ActionRecord[]): ActionRecord[] {
  const closed = actions.filter(
    (a) => a.outcome === 'expired' || a.outcome === 'rejected' || a.outcome === 'cancelled',
  );
  if (closed.length === 0) return [];
  const sentences = answer.split(/(?<=[.!?])\s+|\n+/).filter((s) => !NOT_FUTURE.test(s));
  return closed.filter((action) => {
    const verbs = verbStems(action).join('|');
    const future = new RegExp(`(\\b(will|shall|going to)|'ll)\\s+(\\w+\\s+){0,2}?(${verbs})`, 'i');
    return sentences.some((s) => future.test(s) || (!INVITATION.test(s) && WAITING.some((w) => w.test(s))));
  });
}

function describeActions(actions: readonly ActionRecord[]): string {
  if (actions.length === 0) return 'No write or notify action was executed in this run.';
  return actions
    .map(
      (a) =>
        `- ${a.tool} (${a.toolCallId}): ${a.outcome}${a.decidedBy ? ` (decided by ${a.decidedBy})` : ''}${a.reason?.startsWith('shadow mode') ? ` (${a.reason})` : ''}`,
    )
    .join('\n');
}

/**
 * `problems` are written for the model (what to fix); `forPerson` says the same to the person who asked,
 * in case the run ends on them. Correction texts are never shown to people.
 */
type AnswerCheck = { ok: true; parts: string[] } | { ok: false; problems: string[]; forPerson: string[] };

/** Checks a candidate final answer; problems are sent back to the model to fix. */
export function checkAnswer(
  answer: string,
  state: RunState,
  extra?: (answer: string, state: RunState) => string[],
): AnswerCheck {
  const problems: string[] = [];
  const forPerson: string[] = [];
  const text = answer.trim();
  if (text.length === 0) {
    problems.push('The answer is empty. Answer the question in plain text.');
    forPerson.push('the model gave no answer text');
  }
  if (state.turn && state.turn.pending.length > 0) {
    problems.push('Gated calls are still waiting for a decision; the answer cannot be final yet.');
    forPerson.push('actions were still waiting for a decision');
  }
  if (text.length > state.limits.maxAnswerChars) {
    problems.push(
      `The answer has ${text.length} characters; the most accepted is ${state.limits.maxAnswerChars}. Shorten it.`,
    );
    forPerson.push(
      `the answer was too long (${text.length} characters, at most ${state.limits.maxAnswerChars})`,
    );
  }
  // A sub-agent's actions count like the run's own: none may be reported as done unless it succeeded.
  const actions = allActions(state);
  const falseClaims = claimsOfUndoneActions(text, actions);
  if (falseClaims.length > 0) {
    const undone = falseClaims.map((a) => `${a.tool} (${a.outcome.replaceAll('_', ' ')})`).join(', ');
    problems.push(
      `The answer presents actions as done that did not succeed: ${falseClaims
        .map((a) => `${a.tool} (${a.outcome})`)
        .join(', ')}. What actually happened:\n${describeActions(actions)}`,
    );
    forPerson.push(`the answer presented actions as done that did not succeed: ${undone}`);
  }
  const promised = promisesOfUndecidedActions(text, state.actions).filter((a) => !falseClaims.includes(a));
  if (promised.length > 0) {
    const list = promised.map((a) => `${a.tool} (${a.outcome})`).join(', ');
    problems.push(
      `The answer says an action will still happen, but nobody approved it and it will not run: ${list}. Say plainly that it did not happen. What actually happened:\n${describeActions(state.actions)}`,
    );
    forPerson.push(`the answer said actions would still happen that nobody approved: ${list}`);
  }
  if (extra) {
    const more = extra(text, state);
    problems.push(...more);
    forPerson.push(...more);
  }
  return problems.length > 0 ? { ok: false, problems, forPerson } : { ok: true, parts: splitAnswer(text) };
}
