/**
 * One fake OpenAI for a whole test file, answering every run from the conversation it is sent. Each test
 * tags its question (`[case:<name>]`) and registers a brain under that tag; a request goes to the brain
 * of the last tagged user message, so runs of different tests (and several runs in one thread) never take
 * each other's scripted replies, whatever order the workers call the model in.
 */
import type {
  FakeDelay,
  FakeError,
  FakeOpenAI,
  FakeReply,
  FakeStep,
  RecordedRequest,
  WireMessage,
} from '../../fakes/openai-server.js';

const TAG = /\[case:([a-z0-9-]+)\]/;

/** What a brain sees: the whole request, and the messages of the current run after its question. */
export interface Turn {
  request: RecordedRequest;
  /** The request's messages after the last user message (assistant tool calls and tool results). */
  since: WireMessage[];
  /** Contents of the tool messages in `since`. */
  toolResults: string[];
}

/**
 * A reply, or an HTTP error answer (e.g. a 500 from a model server that is down), or either after a
 * delay (a slow model; the wait ends when the client goes away).
 */
export type Brain = (turn: Turn) => FakeReply | FakeError | FakeDelay;

export interface ModelRouter {
  /** Registers the brain answering runs whose (latest tagged) question carries `[case:<tag>]`. */
  brain(tag: string, brain: Brain): void;
  /** The text to put in a question so that `tag`'s brain answers it. */
  tagged(tag: string, text: string): string;
  /** Requests answered for `tag`, in arrival order. */
  requestsOf(tag: string): RecordedRequest[];
}

const text = (content: WireMessage['content']): string =>
  typeof content === 'string' ? content : JSON.stringify(content ?? '');

function tagOf(request: RecordedRequest): string | undefined {
  for (const message of [...request.body.messages].reverse()) {
    if (message.role !== 'user') continue;
    const tag = TAG.exec(text(message.content))?.[1];
    if (tag) return tag;
  }
  return undefined;
}

function turnOf(request: RecordedRequest): Turn {
  const messages = request.body.messages;
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const since = messages.slice(lastUser + 1);
  return {
    request,
    since,
    toolResults: since.filter((m) => m.role === 'tool').map((m) => text(m.content)),
  };
}

/** Far more steps than a file's runs need; each one dispatches to a brain. */
const STEPS = 2_000;

export function routeModel(openai: FakeOpenAI): ModelRouter {
  const brains = new Map<string, Brain>();
  const seen = new Map<string, RecordedRequest[]>();
  const route: FakeStep = (request) => {
    const tag = tagOf(request);
    const brain = tag === undefined ? undefined : brains.get(tag);
    if (tag === undefined || !brain) {
      return {
        status: 500,
        body: `no brain for ${tag ?? 'an untagged question'}`,
        headers: { 'x-should-retry': 'false' },
      };
    }
    seen.set(tag, [...(seen.get(tag) ?? []), request]);
    return brain(turnOf(request));
  };
  openai.push(...Array.from({ length: STEPS }, () => route));
  return {
    brain: (tag, brain) => {
      if (brains.has(tag)) throw new Error(`brain ${tag} registered twice`);
      brains.set(tag, brain);
    },
    tagged: (tag, question) => `${question} [case:${tag}]`,
    requestsOf: (tag) => [...(seen.get(tag) ?? [])],
  };
}

/** Calls `tool` with `args` once, then answers with `answer(toolResult)`. */
export function callThenAnswer(tool: string, args: unknown, answer: (toolResult: string) => string): Brain {
  return ({ toolResults }) => {
    const result = toolResults.at(-1);
    if (result === undefined) return { toolCalls: [{ name: tool, arguments: JSON.stringify(args) }] };
    return { content: answer(result) };
  };
}

/** Answers at once, without tools. */
export function answerAtOnce(answer: string): Brain {
  return () => ({ content: answer });
}

/** Whether a tool message's JSON says the call succeeded. */
export function succeeded(toolResult: string): boolean {
  try {
    return (JSON.parse(toolResult) as { ok?: unknown }).ok === true;
  } catch {
    return false;
  }
}
