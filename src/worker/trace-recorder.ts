import type { EngineEvent, EventSink } from '../loop/types.js';
import type { TraceEntry } from '../store/records.js';
import type { RunStore } from '../store/run-store.js';

/**
 * Buffers the engine's events of one job as trace entries and writes them in batches, alongside the
 * step's checkpoint, so tracing costs no extra round trip per event.
 */
export class TraceRecorder {
  private buffer: TraceEntry[] = [];

  constructor(
    private readonly runs: RunStore,
    private readonly runId: string,
    private readonly now: () => number,
  ) {}

  readonly record: EventSink = (event: EngineEvent) => {
    this.buffer.push({ ...event, at: this.now() });
  };

  async flush(): Promise<void> {
    if (this.buffer.length === 0) return;
    const entries = this.buffer;
    this.buffer = [];
    await this.runs.appendTrace(this.runId, entries);
  }
}
