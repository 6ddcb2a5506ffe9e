/**
 * Token estimates made before a model call (to refuse one the budgets cannot pay for) and for replies
 * that report no usage. gpt-tokenizer's o200k encoding (the GPT-4o/4.1 family); other models tokenise
 * differently, so these are estimates, not bills.
 */
import { countTokens } from 'gpt-tokenizer';
import type { Message } from './messages.js';
import type { ModelReply, ToolSchema } from './model-port.js';

/**
 * Longest piece counted at once: the tokenizer slows down worse than linearly on long unbroken runs
 * ("abab…" of 40 000 characters takes seconds), so text is counted in pieces, a slight overestimate.
 */
const PIECE_CHARS = 1024;
/** Chat framing per message (role and separators), as in OpenAI's counting recipe. */
const PER_MESSAGE_TOKENS = 4;
/** Tokens that prime the assistant's reply. */
const REPLY_PRIMING_TOKENS = 3;
/** Special-token text (`<|endoftext|>`) in a message is ordinary text: counted, never a throw. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

export function textTokens(text: string): number {
  let tokens = 0;
  for (let i = 0; i < text.length; i += PIECE_CHARS)
    tokens += countTokens(text.slice(i, i + PIECE_CHARS), AS_TEXT);
  return tokens;
}

// Messages are append-only and shared between steps, so each one is counted once per process.
const messageCache = new WeakMap<Message, number>();
const toolsCache = new WeakMap<readonly ToolSchema[], number>();

/** Tokens of one message with its framing; counted once per message object. */
export function messageTokens(m: Message): number {
  let tokens = messageCache.get(m);
  if (tokens === undefined) {
    const calls = m.role === 'assistant' ? (m.toolCalls ?? []) : [];
    tokens =
      PER_MESSAGE_TOKENS +
      textTokens(m.content ?? '') +
      calls.reduce((sum, c) => sum + textTokens(c.name) + textTokens(c.arguments), 0);
    messageCache.set(m, tokens);
  }
  return tokens;
}

function toolsTokens(tools: readonly ToolSchema[]): number {
  let tokens = toolsCache.get(tools);
  if (tokens === undefined) {
    tokens = tools.length === 0 ? 0 : textTokens(JSON.stringify(tools));
    toolsCache.set(tools, tokens);
  }
  return tokens;
}

/** Input tokens of a request: its messages, their framing and the tool schemas. */
export function requestTokens(messages: readonly Message[], tools: readonly ToolSchema[]): number {
  return messages.reduce((sum, m) => sum + messageTokens(m), REPLY_PRIMING_TOKENS) + toolsTokens(tools);
}

/** Output tokens of a reply: its text and its tool calls. */
export function replyTokens(reply: Pick<ModelReply, 'content' | 'toolCalls'>): number {
  return (
    textTokens(reply.content ?? '') +
    reply.toolCalls.reduce((sum, c) => sum + textTokens(c.name) + textTokens(c.arguments), 0)
  );
}
