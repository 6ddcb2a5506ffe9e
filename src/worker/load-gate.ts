/**
 * Backpressure of one worker process. Runs spend their time waiting on models, so a process can hold
 * hundreds at once; what limits it is its own event loop (every step's bookkeeping, Slack and Redis
 * calls share one thread) and its memory. The gate samples both and tells the worker to stop taking jobs
 * while either is over its limit, and to take them again once both are comfortably below it. Jobs it
 * does not take stay queued, for another worker or for later: a busy process never hoards them (a fetch
 * already waiting in Redis when the gate closes may still receive one job).
 *
 * An event loop that keeps up also keeps BullMQ's lock renewal and the run lease renewal (timers on the
 * same loop) on time, so a busy worker's jobs are not reported stalled and taken over by another one.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

interface LoadLimits {
  /** Stop taking jobs while the event loop's p99 delay over the last sample exceeds this (ms). */
  maxEventLoopDelayMs: number;
  /** Stop taking jobs while the V8 heap in use exceeds this share of the heap limit (0-1). */
  maxHeapUsedRatio: number;
}

interface LoadSample {
  /** p99 delay of the event loop over the sample, ms. */
  eventLoopDelayMs: number;
  /** V8 heap in use / heap size limit. */
  heapUsedRatio: number;
}

export type LoadVerdict = { admit: true } | { admit: false; reason: 'event_loop_delay' | 'memory' };

/**
 * Whether to take jobs now, with hysteresis: a gate that closed reopens only once the delay is under half
 * its limit and the heap under 90 % of its limit, so it does not flap on every sample near the edge.
 */
export function judgeLoad(sample: LoadSample, limits: LoadLimits, wasAdmitting: boolean): LoadVerdict {
  const delayLimit = wasAdmitting ? limits.maxEventLoopDelayMs : limits.maxEventLoopDelayMs / 2;
  const heapLimit = wasAdmitting ? limits.maxHeapUsedRatio : limits.maxHeapUsedRatio * 0.9;
  if (sample.heapUsedRatio > heapLimit) return { admit: false, reason: 'memory' };
  if (sample.eventLoopDelayMs > delayLimit) return { admit: false, reason: 'event_loop_delay' };
  return { admit: true };
}

/** What the gate opens and closes: a BullMQ Worker's pause(true) / resume() fit. */
interface Admission {
  stopTaking(): void;
  startTaking(): void;
}

interface LoadGateOptions extends LoadLimits {
  admission: Admission;
  /** How often load is sampled. Default 250 ms. */
  sampleEveryMs?: number;
  /** Called on each change of verdict (for logs and metrics). */
  onChange?: (verdict: LoadVerdict, sample: LoadSample) => void;
  /** Called with every sample. */
  onSample?: (sample: LoadSample, admitting: boolean) => void;
  /** Reads the heap ratio; default V8's heap statistics. */
  heapUsedRatio?: () => number;
}

export interface LoadGate {
  admitting(): boolean;
  stop(): void;
}

function v8HeapUsedRatio(): number {
  const heap = getHeapStatistics();
  return heap.used_heap_size / heap.heap_size_limit;
}

/** Starts sampling; the gate starts open. */
export function startLoadGate(opts: LoadGateOptions): LoadGate {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const heapUsedRatio = opts.heapUsedRatio ?? v8HeapUsedRatio;
  let admitting = true;
  const timer = setInterval(() => {
    const sample: LoadSample = {
      // The histogram counts in nanoseconds; it includes the resolution itself, which is subtracted.
      eventLoopDelayMs: Math.max(0, histogram.percentile(99) / 1e6 - 10),
      heapUsedRatio: heapUsedRatio(),
    };
    histogram.reset();
    const verdict = judgeLoad(sample, opts, admitting);
    opts.onSample?.(sample, verdict.admit);
    if (verdict.admit === admitting) return;
    admitting = verdict.admit;
    if (admitting) opts.admission.startTaking();
    else opts.admission.stopTaking();
    opts.onChange?.(verdict, sample);
  }, opts.sampleEveryMs ?? 250);
  timer.unref();
  return {
    admitting: () => admitting,
    stop() {
      clearInterval(timer);
      histogram.disable();
    },
  };
}
