/**
 * The few Slack Web API calls the doctor makes, over fetch rather than @slack/web-api: the doctor needs
 * the `x-oauth-scopes` header Slack returns with each answer, and one try per call (no retry queue).
 */
import { z } from 'zod';

/** Slack's answer envelope; `needed`/`provided` come with `missing_scope`. */
const slackAnswer = z.looseObject({
  ok: z.boolean(),
  error: z.string().optional(),
  needed: z.string().optional(),
  provided: z.string().optional(),
});

type SlackAnswer = z.output<typeof slackAnswer>;

interface SlackReply {
  body: SlackAnswer;
  /** The token's granted scopes from `x-oauth-scopes`; null when Slack sent no such header. */
  scopes: string[] | null;
}

export interface SlackCaller {
  call(method: string, args?: Record<string, string>, token?: string): Promise<SlackReply>;
}

/** Thrown when Slack cannot be reached or answers something that is not a Web API answer. */
export class SlackUnreachable extends Error {}

export function slackCaller(apiUrl: string, botToken: string, timeoutMs = 10_000): SlackCaller {
  return {
    async call(method, args = {}, token = botToken) {
      let response: Response;
      try {
        response = await fetch(new URL(method, apiUrl), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams(args).toString(),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        throw new SlackUnreachable(`cannot reach ${apiUrl} (${reasonOf(error)})`);
      }
      const text = await response.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new SlackUnreachable(`${apiUrl}${method} answered HTTP ${response.status} without JSON`);
      }
      const parsed = slackAnswer.safeParse(json);
      if (!parsed.success) {
        throw new SlackUnreachable(
          `${apiUrl}${method} answered HTTP ${response.status}, not a Web API answer`,
        );
      }
      const header = response.headers.get('x-oauth-scopes');
      const scopes =
        header === null
          ? null
          : header
              .split(',')
              .map((s) => s.trim())
              .filter((s) => s !== '');
      return { body: parsed.data, scopes };
    },
  };
}

/** The innermost message of a fetch failure (`connect ECONNREFUSED 127.0.0.1:1`). */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  return cause instanceof Error ? cause.message : error.message;
}

/** `missing_scope: needs usergroups:read (…)` for that error, else Slack's error code. */
export function slackError(body: SlackAnswer): string {
  if (body.error === 'missing_scope') {
    return `missing_scope: needs ${body.needed ?? 'a scope'} (add it to the app's bot scopes and reinstall the app)`;
  }
  return body.error ?? 'unknown error';
}
