import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  defaultTextMapGetter,
  defaultTextMapSetter,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { redactJsonLine } from '../log/redact.js';
import type { EngineEvent, EventSink } from '../loop/engine-events.js';
import type { TraceCarrier } from './carrier.js';

/**
 * Spans of loopgate's runs, following the OpenTelemetry GenAI semantic conventions: `invoke_agent` for
 * each stretch of a run a worker advances (a run paused for approval is advanced again later, maybe
 * elsewhere), `chat` for model calls, `execute_tool` for tool calls, `await_approval` for the time a
 * gated call waited for its decision. Only @opentelemetry/api is used here: the SDK is set up in sdk.ts,
 * and the engine knows neither: it reports its events to an EventSink, turned into spans below.
 */
interface RunTracerOptions {
  tracer: Tracer;
  propagator: TextMapPropagator;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: the question, tool arguments and the answer. */
  captureContent: boolean;
  /** Removes configured secrets (the logs' redactor) from captured content. */
  redact: (text: string) => string;
  shutdown: () => Promise<void>;
  /** Exports every span ended so far (tests, benches). */
  flush?: () => Promise<void>;
}

/** Where a run's messages are in Slack. */
interface SlackPlace {
  teamId: string;
  channelId: string;
  threadTs: string;
  /** The thread's permalink, when known. */
  permalink?: string;
}

interface SegmentOptions {
  runId: string;
  jobId: string;
  /** The job kind (start, resume, child_start, ...), when known. */
  job?: string;
  /** The sub-agent whose run this is (absent: the person's own run, agent `loopgate`). */
  agent?: string;
  /** The model the run asks (gen_ai.request.model). */
  requestModel?: string;
  slack?: SlackPlace;
  /** The question, recorded only when content capture is on. */
  question?: string;
  /** Spans this stretch follows from in another trace position (the decision that resumed it). */
  follows?: TraceCarrier;
}

/** An approval as the resume finds it decided (a structural subset of the store's record). */
interface DecidedApproval {
  approvalId: string;
  toolCallId: string;
  tool: string;
  requester: string;
  approvers: { users: readonly string[]; groups: readonly string[] };
  createdAt: number;
  status: string;
  decidedBy: string | null;
  decidedAt: number | null;
}

const slackAttributes = (slack: SlackPlace | undefined): Attributes =>
  slack
    ? {
        'slack.team.id': slack.teamId,
        'slack.channel.id': slack.channelId,
        'slack.thread.ts': slack.threadTs,
        ...(slack.permalink ? { 'slack.thread.permalink': slack.permalink } : {}),
      }
    : {};

/** Where calls made inside `RunTracer.within` find their parent span, looked up when each call starts. */
interface SpanSource {
  current(): Span | undefined;
}

const SPAN_SOURCE = createContextKey('loopgate span source');

/** A Slack Web API call as its span describes it. */
interface SlackCallFacts {
  method: string;
  channel?: string | undefined;
}

/** A job handed to the queue as its span describes it. */
interface QueueSendFacts {
  queue: string;
  job: string;
  runId?: string | undefined;
}

/** Slack's error code (`channel_not_found`, `ratelimited`) or the client's (`slack_webapi_request_error`). */
function slackErrorType(err: unknown): string {
  const e = err as { data?: { error?: unknown }; code?: unknown };
  if (typeof e?.data?.error === 'string') return e.data.error;
  return typeof e?.code === 'string' ? e.code : 'error';
}

export class RunTracer {
  readonly captureContent: boolean;

  constructor(private readonly o: RunTracerOptions) {
    this.captureContent = o.captureContent;
  }

  /** The context a carrier names (the root context for none or a malformed one). */
  contextOf(carrier: TraceCarrier | undefined): Context {
    if (!carrier) return ROOT_CONTEXT;
    return this.o.propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  }

  /** The carrier (W3C traceparent) of a span, to put in job data or the run record. */
  carrierOf(span: Span): TraceCarrier {
    const carrier: Record<string, string> = {};
    this.o.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
    return {
      traceparent: carrier.traceparent ?? '',
      ...(carrier.tracestate ? { tracestate: carrier.tracestate } : {}),
    };
  }

  /** A span of the bot's (an event handled, a decision recorded), child of `parent` when given. */
  startSpan(name: string, attributes: Attributes, parent?: TraceCarrier, kind = SpanKind.SERVER): Span {
    return this.o.tracer.startSpan(name, { kind, attributes }, this.contextOf(parent));
  }

  /** One stretch of a run in a worker's job, child of the run's trace context `parent`. */
  segment(parent: TraceCarrier | undefined, options: SegmentOptions): RunSegment {
    return new RunSegment(this, this.o.tracer, this.contextOf(parent), options);
  }

  /**
   * Runs `fn` so that Slack calls and queue sends made inside it (across awaits: the context manager
   * started in sdk.ts carries it) become children of `source`'s span of the moment. A source rather than a
   * span: a worker's job opens its `invoke_agent` span only once it has loaded the run.
   */
  within<T>(source: SpanSource, fn: () => T): T {
    return context.with(context.active().setValue(SPAN_SOURCE, source), fn);
  }

  /** The span calls made now hang from: the source's, else the active span, else none. */
  private activeParent(): Context | null {
    const active = context.active();
    const span = (active.getValue(SPAN_SOURCE) as SpanSource | undefined)?.current() ?? trace.getSpan(active);
    return span ? trace.setSpan(active, span) : null;
  }

  /**
   * A CLIENT span `slack <method>` for one Web API call, its retries included, when made inside a traced
   * span; outside one the call goes untraced (a span per background lookup would be noise of its own).
   */
  async slackCall<T>(facts: SlackCallFacts, call: () => Promise<T>): Promise<T> {
    const parent = this.activeParent();
    if (!parent) return call();
    const span = this.o.tracer.startSpan(
      `slack ${facts.method}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'rpc.system': 'slack_web_api',
          'rpc.method': facts.method,
          ...(facts.channel ? { 'slack.channel.id': facts.channel } : {}),
        },
      },
      parent,
    );
    try {
      return await call();
    } catch (err) {
      span.setAttribute('error.type', slackErrorType(err));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  }

  /**
   * A PRODUCER span `send <queue>` for a job handed to the queue, child of `parent` (the bot's event or
   * decision span) or of the active span. The job's data carries the run's context, not this span's: the
   * worker's stretch stays a child of the event that started the run.
   */
  async queueSend<T>(
    facts: QueueSendFacts,
    parent: Span | null | undefined,
    send: () => Promise<T>,
  ): Promise<T> {
    const ctx = parent ? trace.setSpan(context.active(), parent) : this.activeParent();
    if (!ctx) return send();
    const span = this.o.tracer.startSpan(
      `send ${facts.queue}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'bullmq',
          'messaging.operation.type': 'send',
          'messaging.operation.name': 'add',
          'messaging.destination.name': facts.queue,
          'loopgate.job.name': facts.job,
          ...(facts.runId ? { 'loopgate.run.id': facts.runId } : {}),
        },
      },
      ctx,
    );
    try {
      return await send();
    } catch (err) {
      span.setAttribute('error.type', err instanceof Error ? err.name : 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  }

  /** Content as JSON, redacted as the logs are: secret keys' values, then every configured secret. */
  redactedJson(value: unknown): string {
    return this.o.redact(redactJsonLine(JSON.stringify(value) ?? ''));
  }

  shutdown(): Promise<void> {
    return this.o.shutdown();
  }

  async flush(): Promise<void> {
    await this.o.flush?.();
  }
}

/** Turns one job's engine events into spans under its `invoke_agent` span. */
export class RunSegment {
  readonly span: Span;
  private readonly context: Context;
  private readonly tools = new Map<string, Span>();
  private ended = false;

  constructor(
    private readonly owner: RunTracer,
    private readonly tracer: Tracer,
    private readonly parent: Context,
    private readonly options: SegmentOptions,
  ) {
    const agent = options.agent ?? 'loopgate';
    const links: Link[] = options.follows
      ? [{ context: trace.getSpanContext(owner.contextOf(options.follows))! }].filter((l) => l.context)
      : [];
    this.span = tracer.startSpan(
      `invoke_agent ${agent}`,
      {
        kind: SpanKind.INTERNAL,
        links,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': agent,
          'gen_ai.conversation.id': options.runId,
          'gen_ai.provider.name': 'openai',
          ...(options.requestModel ? { 'gen_ai.request.model': options.requestModel } : {}),
          'loopgate.run.id': options.runId,
          'loopgate.job.id': options.jobId,
          ...(options.job ? { 'loopgate.job.name': options.job } : {}),
          ...slackAttributes(options.slack),
          ...(owner.captureContent && options.question !== undefined
            ? {
                'gen_ai.input.messages': owner.redactedJson([
                  { role: 'user', parts: [{ type: 'text', content: options.question }] },
                ]),
              }
            : {}),
        },
      },
      parent,
    );
    this.context = trace.setSpan(parent, this.span);
  }

  carrier(): TraceCarrier {
    return this.owner.carrierOf(this.span);
  }

  /** Contract of EventSink: never throws. */
  readonly sink: EventSink = (event) => {
    try {
      this.on(event, Date.now());
    } catch {
      // Tracing must never disturb a run.
    }
  };

  /**
   * The waits of the decided approvals this job applies: from the card's creation to the decision, as
   * siblings of the stretches (children of the run's context), so the gap in the trace has a name.
   */
  approvalWaits(records: readonly DecidedApproval[]): void {
    for (const r of records) {
      if (r.status === 'pending' || r.status === 'superseded') continue;
      const end = r.decidedAt ?? Date.now();
      const span = this.tracer.startSpan(
        `await_approval ${r.tool}`,
        {
          kind: SpanKind.INTERNAL,
          startTime: r.createdAt,
          attributes: {
            'loopgate.run.id': this.options.runId,
            'loopgate.approval.id': r.approvalId,
            'gen_ai.tool.name': r.tool,
            'gen_ai.tool.call.id': r.toolCallId,
            'loopgate.approval.requested_by': r.requester,
            'loopgate.approval.asked': [...r.approvers.users, ...r.approvers.groups],
            'loopgate.approval.decision': r.status,
            ...(r.decidedBy ? { 'loopgate.approval.decided_by': r.decidedBy } : {}),
            'loopgate.approval.wait_ms': Math.max(0, end - r.createdAt),
          },
        },
        this.parent,
      );
      span.end(end);
    }
  }

  /** Ends the stretch (and any tool span a crash or a yield left open). */
  end(outcome?: string): void {
    if (this.ended) return;
    this.ended = true;
    for (const span of this.tools.values()) span.end();
    this.tools.clear();
    if (outcome) this.span.setAttribute('loopgate.job.outcome', outcome);
    this.span.end();
  }

  private child(name: string, kind: SpanKind, attributes: Attributes, startTime?: number): Span {
    return this.tracer.startSpan(
      name,
      { kind, attributes, ...(startTime === undefined ? {} : { startTime }) },
      this.context,
    );
  }

  /** A model call as a `chat` span, from its start (the reply's time less its duration) to the reply. */
  private chatSpan(event: Extract<EngineEvent, { type: 'model_replied' }>, now: number): void {
    const requested = this.options.requestModel ?? event.model;
    const span = this.child(
      `chat ${requested ?? ''}`.trim(),
      SpanKind.CLIENT,
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        ...(requested ? { 'gen_ai.request.model': requested } : {}),
        ...(event.model ? { 'gen_ai.response.model': event.model } : {}),
        'gen_ai.usage.input_tokens': event.usage.inputTokens,
        'gen_ai.usage.output_tokens': event.usage.outputTokens,
        ...(event.finishReason ? { 'gen_ai.response.finish_reasons': [event.finishReason] } : {}),
        'gen_ai.conversation.id': this.options.runId,
        'loopgate.step': event.step,
        'loopgate.cost_usd': event.costUsd,
        'loopgate.tool_calls': event.toolCalls,
      },
      now - event.durationMs,
    );
    span.end(now);
  }

  /** Ends a tool call's `execute_tool` span with its outcome (opened here if its start was not seen). */
  private endToolSpan(event: Extract<EngineEvent, { type: 'tool_finished' }>, now: number): void {
    const span =
      this.tools.get(event.toolCallId) ??
      this.child(
        `execute_tool ${event.tool}`,
        SpanKind.INTERNAL,
        {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': event.tool,
          'gen_ai.tool.call.id': event.toolCallId,
          'gen_ai.tool.type': 'function',
          'loopgate.tool.effect': event.effect,
        },
        now - event.durationMs,
      );
    this.tools.delete(event.toolCallId);
    span.setAttribute('loopgate.tool.outcome', event.ok ? 'ok' : (event.code ?? 'error'));
    if (!event.ok) {
      span.setAttribute('error.type', event.code ?? 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end(now);
  }

  private on(event: EngineEvent, now: number): void {
    switch (event.type) {
      case 'model_replied':
        this.chatSpan(event, now);
        return;
      case 'tool_started': {
        const span = this.child(`execute_tool ${event.tool}`, SpanKind.INTERNAL, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': event.tool,
          'gen_ai.tool.call.id': event.toolCallId,
          'gen_ai.tool.type': 'function',
          'loopgate.tool.effect': event.effect,
          ...(this.owner.captureContent
            ? { 'gen_ai.tool.call.arguments': this.owner.redactedJson(event.args) }
            : {}),
        });
        this.tools.get(event.toolCallId)?.end();
        this.tools.set(event.toolCallId, span);
        return;
      }
      case 'tool_retried':
        this.tools.get(event.toolCallId)?.addEvent('retry', {
          'loopgate.retry.attempt': event.attempt,
          'error.type': event.code,
          'loopgate.retry.delay_ms': event.delayMs,
        });
        return;
      case 'tool_finished':
        this.endToolSpan(event, now);
        return;
      case 'approval_needed':
        this.span.addEvent('approval_needed', {
          'gen_ai.tool.call.id': event.calls.map((c) => c.toolCallId),
          'gen_ai.tool.name': event.calls.map((c) => c.tool),
        });
        this.span.setAttribute('loopgate.run.status', 'awaiting_approval');
        return;
      case 'decision_applied':
        this.span.addEvent('decision_applied', {
          'gen_ai.tool.call.id': event.toolCallId,
          'loopgate.approval.decision': event.decision,
          ...(event.by ? { 'loopgate.approval.decided_by': event.by } : {}),
        });
        return;
      case 'delegated':
        this.span.addEvent('delegated', {
          'gen_ai.agent.name': event.calls.map((c) => c.agent),
          'loopgate.child_run.id': event.calls.map((c) => c.childRunId),
        });
        return;
      case 'subagent_finished':
        this.span.addEvent('subagent_finished', {
          'gen_ai.agent.name': event.agent,
          'loopgate.child_run.id': event.childRunId,
          'loopgate.child_run.outcome': event.outcome,
          'loopgate.child_run.duration_ms': event.durationMs,
        });
        return;
      case 'context_compacted':
        this.child('compact_context', SpanKind.INTERNAL, {}, now - event.durationMs).end(now);
        return;
      case 'answer_rejected':
        this.span.addEvent('answer_rejected', { 'loopgate.problems': event.problems.length });
        return;
      case 'finished':
        this.span.setAttributes({
          'loopgate.run.status': event.status,
          'loopgate.run.stop_reason': event.stopReason,
          ...(this.owner.captureContent
            ? {
                'gen_ai.output.messages': this.owner.redactedJson([
                  { role: 'assistant', parts: [{ type: 'text', content: event.message }] },
                ]),
              }
            : {}),
        });
        if (event.status === 'failed') {
          this.span.setStatus({ code: SpanStatusCode.ERROR, message: event.stopReason });
          this.span.setAttribute('error.type', event.stopReason);
        }
        return;
      case 'step_started':
        return;
    }
  }
}
