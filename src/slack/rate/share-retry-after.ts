import { webApi } from '@slack/bolt';
import type { SlackBudget } from './slack-budget.js';

/**
 * Every 429 this WebClient sees pauses that budget (the method, and the channel for posts) for every
 * process of the installation. The client still waits Retry-After and retries the call itself.
 */
export function shareRetryAfter(client: webApi.WebClient, budget: SlackBudget): void {
  client.on(webApi.WebClientEvent.RATE_LIMITED, (retryAfterSec: unknown, request: unknown) => {
    const { url, body } = (request ?? {}) as { url?: unknown; body?: Record<string, unknown> };
    if (typeof url !== 'string' || typeof retryAfterSec !== 'number') return;
    const method = url.slice(url.lastIndexOf('/') + 1);
    const channel = body?.channel ?? body?.channel_id;
    budget.rateLimited(method, typeof channel === 'string' ? channel : undefined, retryAfterSec);
  });
}
