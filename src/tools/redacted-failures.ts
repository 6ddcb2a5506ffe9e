/**
 * Tools whose failures never carry a configured secret's value. A tool's error message becomes the
 * result the model reads, the trace and what Slack shows; an upstream server or a command may echo a
 * token into it (`401: bad token xoxb-…`). Wrapping every tool once covers built-in and custom tools
 * alike, and the engine needs no knowledge of secrets.
 */
import type { AnyTool } from '../loop/types.js';

/** Replaces every secret value in a text by `[redacted]`. */
export type Redact = (text: string) => string;

/** The caught error with its message and stack redacted (in place: it is ours alone once caught). */
function redactedError(err: unknown, redact: Redact): unknown {
  if (typeof err === 'string') return redact(err);
  if (!(err instanceof Error)) return err;
  err.message = redact(err.message);
  if (err.stack) err.stack = redact(err.stack);
  return err;
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
