/**
 * Start-up failures a person can act on. Slack refusing a token surfaces from Bolt as a bare
 * WebAPIPlatformError ("An API error occurred: invalid_auth") with a stack: here it becomes one fatal JSON
 * line naming the variable that holds the token and where to get a good one, without a stack.
 */

import { createLogger } from '../log/logger.js';
import { LoopgateError } from '../loop/errors.js';

/** Slack's answers meaning "this token is not valid (any more)". */
const AUTH_ERRORS = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
]);

const WHERE: Record<SlackTokenVariable, string> = {
  SLACK_BOT_TOKEN: "the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page",
  SLACK_APP_TOKEN:
    "an app-level token (xapp-…) with connections:write from the app's Basic Information page, with Socket Mode on",
};

type SlackTokenVariable = 'SLACK_BOT_TOKEN' | 'SLACK_APP_TOKEN';

class SlackTokenRefused extends LoopgateError {
  constructor(
    readonly variable: SlackTokenVariable,
    readonly slackError: string,
  ) {
    super('slack_token_refused', `Slack refused ${variable} (${slackError}): set it to ${WHERE[variable]}`);
  }
}

/** `err` as a SlackTokenRefused naming `variable` when Slack refused a token, else `err` unchanged. */
export function namedSlackError(err: unknown, variable: SlackTokenVariable): unknown {
  const data = (err as { code?: unknown; data?: { error?: unknown } } | undefined) ?? {};
  if (data.code !== 'slack_webapi_platform_error') return err;
  const code = typeof data.data?.error === 'string' ? data.data.error : '';
  return AUTH_ERRORS.has(code) ? new SlackTokenRefused(variable, code) : err;
}

/** Logs why start-up failed, as one JSON line, and exits 1. */
export function failStartup(service: string, err: unknown): never {
  const logger = createLogger({ level: 'info', service });
  if (err instanceof SlackTokenRefused) {
    logger.fatal({ variable: err.variable, slackError: err.slackError }, err.message);
  } else {
    logger.fatal({ err }, `${service} could not start`);
  }
  return process.exit(1);
}
