/** The roster a bot or worker process uses, from its policy, store and Slack client. */
import type { Policy } from '../../config/policy.js';
import type { Logger } from '../../loop/tool-contract.js';
import type { Store } from '../../store/index.js';
import { createOncallRoster } from './roster.js';
import type { OncallRoster } from './roster-port.js';
import { slackUserByEmail } from './slack-email.js';

interface ProcessRosterDeps {
  policy: Policy;
  store: Store;
  env: Readonly<Record<string, string | undefined>>;
  /** users.lookupByEmail through the process's Slack rate budget. */
  lookupByEmail: (email: string) => Promise<unknown>;
  logger: Logger;
}

export function processRoster(deps: ProcessRosterDeps): OncallRoster {
  return createOncallRoster({
    redis: deps.store.context.redis,
    keyPrefix: deps.store.context.keys.prefix,
    env: deps.env,
    slackUserByEmail: slackUserByEmail(deps.lookupByEmail),
    logger: deps.logger,
    ttlMs: deps.policy.approvals.oncallCacheSeconds * 1_000,
  });
}
