/** What the tools need from the outside, injected by whoever builds them (the worker, or a test). */
import type { Clock } from '../loop/ports.js';
import type { Lookup } from './net/lookup.js';
import type { Env } from './settings.js';

/** Posts to Slack; the worker passes one backed by the Slack Web API. Tools never import @slack/*. */
export interface SlackPoster {
  /** Posts `text` (Slack mrkdwn) as a new message in `channel`. */
  postMessage(channel: string, text: string): Promise<{ ts: string; permalink?: string }>;
}

export interface ToolDeps {
  /** Where secrets named by the policy are read; default `process.env`. */
  env?: Env;
  /** Host name resolution for the address checks; default the system resolver (dns.lookup). */
  lookup?: Lookup;
  /** Default the system clock. */
  clock?: Clock;
  /** Required when `post_message` is enabled. */
  slack?: SlackPoster;
}

export const systemClock: Clock = { now: () => Date.now() };
