/**
 * Engine events as steps of Slack's timeline (`task_update` chunks): a short title per tool call
 * ("GET status.internal/payments"), its outcome, its sources. Pure functions over the events.
 */
import type { EngineEvent } from '../../loop/engine-events.js';
import type { GatedCall } from '../../loop/gated-calls.js';
import type { TaskUpdate } from './stream-writer.js';

const MAX_TITLE = 80;
const MAX_TEXT = 300;

const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** `host/path` of a URL, or the text as it is when it is none. */
function shortUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return raw;
  }
}

/** A URL a call reads from, when its arguments name one. */
function urlOf(args: unknown): string | undefined {
  const a = record(args);
  const url = a.url ?? a.endpoint;
  return typeof url === 'string' && /^https?:\/\//.test(url) ? url : undefined;
}

/** What a person reads in the timeline for a call: the method and where, else the tool and its subject. */
export function taskTitle(tool: string, args: unknown): string {
  const a = record(args);
  const url = urlOf(args);
  if (url) {
    const method = typeof a.method === 'string' ? a.method.toUpperCase() : 'GET';
    return clip(`${method} ${shortUrl(url)}`, MAX_TITLE);
  }
  const subject = ['query', 'name', 'runbook', 'service', 'path', 'target', 'channel'].find(
    (k) => typeof a[k] === 'string' && a[k] !== '',
  );
  return clip(subject ? `${tool}: ${String(a[subject])}` : tool, MAX_TITLE);
}

/** Where the call's answer comes from, as Slack's URL source elements. */
function taskSources(args: unknown): TaskUpdate['sources'] {
  const url = urlOf(args);
  return url ? [{ type: 'url', url, text: shortUrl(url) }] : undefined;
}

/** Keeps each call's title between its start and its end, and turns events into task updates. */
export class Timeline {
  private readonly titles = new Map<string, { title: string; sources: TaskUpdate['sources'] }>();

  /** The task updates an event adds to the timeline (often none). */
  updates(event: EngineEvent): TaskUpdate[] {
    switch (event.type) {
      case 'tool_started': {
        const known = { title: taskTitle(event.tool, event.args), sources: taskSources(event.args) };
        this.titles.set(event.toolCallId, known);
        return [this.task(event.toolCallId, 'in_progress')];
      }
      case 'tool_retried':
        return [this.task(event.toolCallId, 'in_progress', `retrying after ${event.code}`)];
      case 'tool_finished': {
        if (!this.titles.has(event.toolCallId))
          this.titles.set(event.toolCallId, { title: event.tool, sources: undefined });
        return [
          event.ok
            ? this.task(event.toolCallId, 'complete', `done in ${Math.round(event.durationMs)} ms`)
            : this.task(event.toolCallId, 'error', `failed: ${event.code ?? 'error'}`),
        ];
      }
      case 'approval_needed':
        return event.calls.map((call) => this.waiting(call));
      case 'decision_applied': {
        // Emitted once the decision was applied: an approved call's run was shown by its tool events.
        if (event.decision === 'approved') return [];
        const by = event.by ? ` by ${event.by}` : '';
        return [this.task(event.toolCallId, 'error', `not run: ${event.decision}${by}`)];
      }
      case 'delegated':
        return event.calls.map((call) => {
          this.titles.set(call.toolCallId, { title: `Asking ${call.agent}`, sources: undefined });
          return this.task(call.toolCallId, 'in_progress');
        });
      case 'subagent_finished':
        return [
          this.task(
            event.toolCallId,
            event.outcome === 'completed' ? 'complete' : 'error',
            `${event.agent}: ${event.outcome}`,
          ),
        ];
      default:
        return [];
    }
  }

  /** A gated call waiting for people: a pending step pointing at its card. */
  waiting(call: GatedCall): TaskUpdate {
    this.titles.set(call.toolCallId, {
      title: taskTitle(call.tool, call.args),
      sources: taskSources(call.args),
    });
    return {
      ...this.task(call.toolCallId, 'pending'),
      details: 'Waiting for approval on the card below',
    };
  }

  private task(id: string, status: TaskUpdate['status'], output?: string): TaskUpdate {
    const known = this.titles.get(id) ?? { title: 'Step', sources: undefined };
    return {
      type: 'task_update',
      id,
      title: known.title,
      status,
      ...(output ? { output: clip(output, MAX_TEXT) } : {}),
      ...(known.sources ? { sources: known.sources } : {}),
    };
  }
}
