/**
 * The demo's scripted model: an on-call engineer's reasoning written as code, answering the Chat
 * Completions requests the worker sends (served by the fake OpenAI-compatible server). It reacts to what
 * it receives, never to a fixed order: the service comes from the question, the health URL from the
 * http_get tool's description (its allowed prefix), the facts from the tool results, the cited line
 * from the runbook search, and the final answer from what the restart and its verification returned
 * (or from a rejection, which it reports as such).
 */
import { z } from 'zod';
import type { FakeStep, RecordedRequest, WireMessage } from '../test/fakes/openai-server.js';

const toolOutcome = z.union([
  z.object({
    ok: z.literal(true),
    data: z.unknown(),
    verification: z.object({ ok: z.boolean(), summary: z.string() }).nullish(),
  }),
  z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) }),
]);
type ToolOutcome = z.infer<typeof toolOutcome>;

const healthBody = z.looseObject({
  status: z.string(),
  p99_latency_ms: z.number().optional(),
  checks: z.record(z.string(), z.string()).default({}),
});
type Health = z.infer<typeof healthBody> & { httpStatus: string; url: string };

/** Everything the model has read so far. */
interface Knowledge {
  question: string;
  tools: Map<string, string>;
  /** The latest result of each tool, by tool name. */
  results: Map<string, { args: string; outcome: ToolOutcome }>;
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function textOf(content: WireMessage['content'] | null | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

function read(request: RecordedRequest): Knowledge {
  const messages = request.body.messages;
  const calls = new Map<string, { name: string; args: string }>();
  const results: Knowledge['results'] = new Map();
  let question = '';
  for (const m of messages) {
    if (m.role === 'user') question = textOf(m.content);
    if (m.role === 'assistant') {
      for (const c of m.tool_calls ?? [])
        calls.set(c.id, { name: c.function.name, args: c.function.arguments });
    }
    if (m.role === 'tool') {
      const call = calls.get(m.tool_call_id);
      const parsed = toolOutcome.safeParse(jsonOrNull(textOf(m.content)));
      if (call && parsed.success) results.set(call.name, { args: call.args, outcome: parsed.data });
    }
  }
  const tools = new Map(
    (request.body.tools ?? []).map((t) => [t.function.name, t.function.description ?? '']),
  );
  return { question, tools, results };
}

/** The first URL prefix http_get may read, from its description ("…allowed: <p1>, <p2>. For …"). */
function healthPrefix(k: Knowledge): string | undefined {
  const listed = /allowed: (.+?)\. For /.exec(k.tools.get('http_get') ?? '')?.[1];
  return listed?.split(', ')[0];
}

/** The service named in the question, among those the restart action accepts. */
function serviceOf(k: Knowledge): string | undefined {
  const declared = /service: ([a-z0-9_|-]+)/.exec(k.tools.get('run_action') ?? '')?.[1]?.split('|') ?? [];
  const words = new Set(k.question.toLowerCase().match(/[a-z0-9_-]+/g) ?? []);
  return declared.find((s) => words.has(s));
}

function health(k: Knowledge): Health | { problem: string } | undefined {
  const got = k.results.get('http_get');
  if (!got) return undefined;
  if (!got.outcome.ok) return { problem: got.outcome.error.message };
  const text = String(got.outcome.data);
  const [head = '', ...rest] = text.split('\n\n');
  const status = /^HTTP (\d+ [^\n]*?) for GET (\S+)/.exec(head);
  const body = healthBody.safeParse(jsonOrNull(rest.join('\n\n')));
  if (!status || !body.success)
    return { problem: `the health endpoint answered something I cannot read: ${head}` };
  return { ...body.data, httpStatus: status[1] ?? '', url: status[2] ?? '' };
}

/** The runbook line (`path:line`) that says to restart, and what it says. */
function restartAdvice(k: Knowledge): { cite: string; says: string } | undefined {
  const got = k.results.get('search_runbooks');
  if (!got?.outcome.ok) return undefined;
  const line = /^\s+(\S+:\d+): (.*\brestart.*)$/im.exec(String(got.outcome.data));
  return line ? { cite: line[1] ?? '', says: (line[2] ?? '').replace(/^[-*\d.\s]+/, '').trim() } : undefined;
}

/** What run_action returned for an HTTP action: `{ action, status, body }`. */
function httpStatusOf(data: unknown): string {
  const parsed = z.object({ status: z.number() }).safeParse(data);
  return parsed.success ? `the service answered HTTP ${parsed.data.status}` : 'it returned a result';
}

function problems(h: Health): string {
  const bad = Object.entries(h.checks).filter(([, v]) => v !== 'ok');
  const list = bad.map(([name, v]) => `${name.replace('_', ' ')} ${v}`).join('; ');
  return `${list || 'no failing check listed'}${h.p99_latency_ms ? `, p99 latency ${h.p99_latency_ms} ms` : ''}`;
}

function findings(h: Health, advice: ReturnType<typeof restartAdvice>): string[] {
  const lines = [`- \`GET ${h.url}\` answered **${h.httpStatus}**: status *${h.status}*, ${problems(h)}.`];
  if (advice) lines.push(`- The runbook (\`${advice.cite}\`) says: “${advice.says}”`);
  return lines;
}

function finalAnswer(service: string, h: Health, k: Knowledge): FakeStep {
  const advice = restartAdvice(k);
  const restart = k.results.get('run_action');
  const found = ['What I found:', ...findings(h, advice)];
  if (!restart) {
    return { content: [`**${service} is ${h.status}.**`, '', ...found].join('\n') };
  }
  if (!restart.outcome.ok) {
    return {
      content: [
        `**${service} is still ${h.status}: the restart was not run.**`,
        '',
        ...found,
        '',
        `The restart did not happen: ${restart.outcome.error.message}`,
      ].join('\n'),
    };
  }
  const verification = restart.outcome.verification;
  const healthyAgain = verification?.ok === true;
  return {
    content: [
      healthyAgain
        ? `**${service} was ${h.status}; it is healthy again after a restart.**`
        : `**${service} was restarted, but its health check still fails.**`,
      '',
      ...found,
      '',
      'What was done:',
      `- \`restart_service\` (${service}, prod) ran once, after approval: ${httpStatusOf(restart.outcome.data)}.`,
      `- Verification: ${verification?.summary ?? 'none declared'}.`,
      '',
      healthyAgain
        ? 'Keep an eye on p99 latency for the next 15 minutes; if the pool fills up again, look for long-running queries (runbook section *Database*).'
        : 'Escalate to the payments team: the restart did not help.',
    ].join('\n'),
  };
}

/** One reply, from everything the conversation holds so far. */
export function onCallStep(request: RecordedRequest): FakeStep {
  const k = read(request);
  const service = serviceOf(k);
  const prefix = healthPrefix(k);
  if (!service || !prefix) {
    return {
      content:
        'Which service do you mean? I can check the ones I have a health endpoint and a restart action for.',
    };
  }
  const h = health(k);
  if (!h) {
    return {
      content: `Checking the ${service} health endpoint and the runbooks first.`,
      toolCalls: [
        { name: 'http_get', arguments: JSON.stringify({ url: `${prefix}${service}` }) },
        { name: 'search_runbooks', arguments: JSON.stringify({ query: `${service} degraded slow restart` }) },
      ],
    };
  }
  if ('problem' in h) return { content: `I could not read ${service}'s health: ${h.problem}` };
  const advice = restartAdvice(k);
  if (h.status !== 'ok' && advice && !k.results.has('run_action')) {
    return {
      content:
        `${service} reports ${h.status} (${problems(h)}) while its database is ok; ` +
        `${advice.cite} says to restart it in exactly this case.`,
      toolCalls: [
        {
          name: 'run_action',
          arguments: JSON.stringify({ action: 'restart_service', params: { service, env: 'prod' } }),
        },
      ],
    };
  }
  return finalAnswer(service, h, k);
}

/** Script for the fake server: the same reasoning for each of up to `maxCalls` requests. */
export function onCallScript(maxCalls: number): FakeStep[] {
  return Array.from({ length: maxCalls }, () => onCallStep);
}
