import { z } from 'zod';

/**
 * A trace context as it travels in job data and the run record: W3C Trace Context's `traceparent` (and
 * `tracestate`), so a resume hours later on another worker continues the run's trace.
 */
export const traceCarrierSchema = z.strictObject({
  traceparent: z.string().regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, 'a W3C traceparent'),
  tracestate: z.string().max(512).optional(),
});

export type TraceCarrier = z.infer<typeof traceCarrierSchema>;
