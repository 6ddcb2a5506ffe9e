/**
 * Tools whose failures never carry a configured secret's value. A tool's error message becomes the
 * result the model reads, the trace and what Slack shows; an upstream server or a command may echo a
 * token into it (`401: bad token xoxb-…`). Wrapping every tool once covers built-in and custom tools
 * alike, and the engine needs no knowledge of secrets.
 */
import type { AnyTool } from '../loop/tool-contract.js';

/** Replaces every secret value in a text by `[redacted]`. */
export type Redact = (text: string) => string;

/** Sets an own property, also over a getter (DOMException's `message`); false when the error is frozen. */
function overwrite(err: Error, key: 'message' | 'stack', value: string): boolean {
  try {
    Object.defineProperty(err, key, { value, writable: true, configurable: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * The caught error with its message and stack redacted, in place (it is ours alone once caught) so its
 * class and code survive; an error that cannot be changed is replaced by a plain one.
 */
function redactedError(err: unknown, redact: Redact): unknown {
  if (typeof err === 'string') return redact(err);
  if (!(err instanceof Error)) return err;
  const message = redact(err.message);
  const stack = err.stack === undefined ? undefined : redact(err.stack);
  if (message === err.message && stack === err.stack) return err;
  const changed =
    overwrite(err, 'message', message) && (stack === undefined || overwrite(err, 'stack', stack));
  return changed ? err : new Error(message);
}

function withRedactedFailure(tool: AnyTool, redact: Redact): AnyTool {
  const { preview, verify } = tool;
  return {
    ...tool,
    async execute(args, ctx) {
      try {
        return await tool.execute(args, ctx);
      } catch (err) {
        throw redactedError(err, redact);
      }
    },
    ...(preview && {
      async preview(args, ctx) {
        try {
          return await preview.call(tool, args, ctx);
        } catch (err) {
          throw redactedError(err, redact);
        }
      },
    }),
    ...(verify && {
      async verify(args, raw, ctx) {
        try {
          const checked = await verify.call(tool, args, raw, ctx);
          return { ...checked, summary: redact(checked.summary) };
        } catch (err) {
          throw redactedError(err, redact);
        }
      },
    }),
  };
}

export function withRedactedFailures(
  tools: ReadonlyMap<string, AnyTool>,
  redact: Redact,
): Map<string, AnyTool> {
  return new Map([...tools].map(([name, tool]) => [name, withRedactedFailure(tool, redact)]));
}
