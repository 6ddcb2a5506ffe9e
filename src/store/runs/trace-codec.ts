import { z } from 'zod';
import { type TraceEntry, traceEntrySchema } from '../records.js';
import { fromRow, type RowShape, toRow } from '../rows.js';
import { runStatusSchema, stopReasonSchema } from './run-state-schema.js';

/**
 * The trace as stored. The worker records engine events as the compact entries below (only what the
 * run's messages and state do not already hold: timings, outcomes, decisions); saveStep keeps each as
 * the row `[tag, at - createdAt, ...fields]` in the order given here (createdAt is the run's), optional
 * fields last and left out when absent. Any other entry (a kind not listed, one with more fields, or
 * one appended without the run's createdAt) is kept as its JSON object. Reading gives back the same
 * entries either way; readers find each field under its name.
 */

const effect = z.enum(['read', 'write', 'notify']);
const strings = z.array(z.string());

const kinds = {
  /** A model call returned: which step, how long it took, which model answered. */
  model_replied: {
    tag: 'm',
    schema: z.strictObject({
      type: z.literal('model_replied'),
      at: z.number(),
      step: z.number(),
      durationMs: z.number(),
      model: z.string().optional(),
    }),
    fields: ['type', 'at', 'step', 'durationMs', 'model'],
  },
  /** A call's attempt failed transiently and is tried again after `delayMs`. */
  tool_retried: {
    tag: 't',
    schema: z.strictObject({
      type: z.literal('tool_retried'),
      at: z.number(),
      toolCallId: z.string(),
      effect,
      attempt: z.number(),
      code: z.string(),
      message: z.string(),
      delayMs: z.number(),
    }),
    fields: ['type', 'at', 'toolCallId', 'effect', 'attempt', 'code', 'message', 'delayMs'],
  },
  /** A gated (write/notify) call began executing; reads are traced by their end only. */
  tool_started: {
    tag: 's',
    schema: z.strictObject({
      type: z.literal('tool_started'),
      at: z.number(),
      toolCallId: z.string(),
      effect,
    }),
    fields: ['type', 'at', 'toolCallId', 'effect'],
  },
  /** A call ended: its outcome and duration (`code` for a failure). */
  tool_finished: {
    tag: 'f',
    schema: z.strictObject({
      type: z.literal('tool_finished'),
      at: z.number(),
      toolCallId: z.string(),
      effect,
      ok: z.boolean(),
      durationMs: z.number(),
      code: z.string().optional(),
    }),
    fields: ['type', 'at', 'toolCallId', 'effect', 'ok', 'durationMs', 'code'],
  },
  /** The run paused for these gated calls. */
  approval_needed: {
    tag: 'a',
    schema: z.strictObject({ type: z.literal('approval_needed'), at: z.number(), toolCallIds: strings }),
    fields: ['type', 'at', 'toolCallIds'],
  },
  /** A decision reached the engine. */
  decision_applied: {
    tag: 'd',
    schema: z.strictObject({
      type: z.literal('decision_applied'),
      at: z.number(),
      toolCallId: z.string(),
      decision: z.string(),
      by: z.string().optional(),
    }),
    fields: ['type', 'at', 'toolCallId', 'decision', 'by'],
  },
  /** A candidate final answer went back to the model. */
  answer_rejected: {
    tag: 'r',
    schema: z.strictObject({ type: z.literal('answer_rejected'), at: z.number(), problems: strings }),
    fields: ['type', 'at', 'problems'],
  },
  /** The run ended (its message is the run's stopMessage). */
  finished: {
    tag: 'e',
    schema: z.strictObject({
      type: z.literal('finished'),
      at: z.number(),
      status: runStatusSchema,
      stopReason: stopReasonSchema,
    }),
    fields: ['type', 'at', 'status', 'stopReason'],
  },
} as const;

type Kinds = typeof kinds;

/** A trace entry the worker records, by kind. */
export type RecordedTraceEntry = { [K in keyof Kinds]: z.output<Kinds[K]['schema']> }[keyof Kinds];

const byType = new Map<string, RowShape<TraceEntry> & { tag: string }>(
  Object.values(kinds).map((kind) => [
    kind.schema.shape.type.value,
    { tag: kind.tag, fields: kind.fields, schema: kind.schema as unknown as z.ZodType<TraceEntry> },
  ]),
);
const byTag = new Map([...byType.entries()].map(([type, shape]) => [shape.tag, { type, shape }]));

/** One trace entry as its list element, for a run created at `createdAt`. */
export function encodeTraceEntry(entry: TraceEntry, createdAt: number): string {
  const shape = byType.get(entry.type);
  const row = shape?.schema.safeParse(entry).success ? toRow(shape, entry) : null;
  const offset = entry.at - createdAt;
  if (!shape || row === null || offset + createdAt !== entry.at) return JSON.stringify(entry);
  row[0] = shape.tag;
  row[1] = offset;
  return JSON.stringify(row);
}

/** Trace entries from their parsed list elements, for a run created at `createdAt`; throws on a damaged one. */
export function decodeTrace(elements: readonly unknown[], createdAt: number): TraceEntry[] {
  return elements.map((element) => {
    if (!Array.isArray(element)) return traceEntrySchema.parse(element);
    const [tag, offset, ...fields] = element;
    const kind = byTag.get(String(tag));
    if (!kind) throw new TypeError(`a trace row of unknown kind ${JSON.stringify(tag)}`);
    if (typeof offset !== 'number')
      throw new TypeError(`a trace row without its time: ${JSON.stringify(element)}`);
    return fromRow(kind.shape, [kind.type, createdAt + offset, ...fields]);
  });
}
