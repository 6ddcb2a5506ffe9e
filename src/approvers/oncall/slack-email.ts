/**
 * Maps an on-call person to Slack: `users.lookupByEmail`. Slack answers `users_not_found` for an email no
 * member has (thrown by the WebClient as a platform error): that person is not counted, nothing else is.
 * Any other failure throws, and the source resolves to its fallback.
 */
import { z } from 'zod';

const lookupReply = z.looseObject({ user: z.looseObject({ id: z.string() }) });

const notFound = (err: unknown) =>
  (err as { data?: { error?: unknown } } | undefined)?.data?.error === 'users_not_found';

/** `call` performs users.lookupByEmail (through the caller's rate budget). */
export function slackUserByEmail(
  call: (email: string) => Promise<unknown>,
): (email: string) => Promise<string | null> {
  return async (email) => {
    try {
      return lookupReply.parse(await call(email)).user.id;
    } catch (err) {
      if (notFound(err)) return null;
      throw err;
    }
  };
}
