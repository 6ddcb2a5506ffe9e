/** The Slack Web API methods the agent surfaces call, as a port (direct, or through the rate budget). */
import type { StreamCalls } from './stream-writer.js';

export type SessionStatus = 'processing' | 'suspended' | 'active' | 'closed';

/** The Web API methods beyond the stream's own. Each rejects with the WebClient's error. */
export interface SurfaceCalls extends StreamCalls {
  setStatus(args: {
    channel_id: string;
    thread_ts: string;
    status: SessionStatus;
    title?: string;
    initiator_user_id?: string;
  }): Promise<void>;
  rename(args: { channel_id: string; thread_ts: string; title: string }): Promise<void>;
  /** Replaces a message's text (a stream left by a dead worker whose stream Slack already closed). */
  update(args: { channel: string; ts: string; markdown_text: string }): Promise<void>;
  /**
   * Whether a new stream may start in this thread now (a free chat.startStream slot, taken for the
   * thread's next start); false: the run's answer is posted whole instead. Absent: always.
   */
  streamRoom?(channel: string, threadTs: string): Promise<boolean>;
}
