/**
 * Bounds on a tool call's raw arguments text, checked before it is parsed: deeply nested JSON overflows
 * the stack of every recursive walk after JSON.parse (zod, canonical JSON, hashing), and huge arguments
 * are never a sensible tool call.
 */

/** Deepest nesting of arrays and objects accepted in one call's arguments. */
const MAX_ARGS_DEPTH = 64;
/** Longest arguments text accepted for one call (256 Ki characters). */
const MAX_ARGS_CHARS = 256 * 1024;

/** Deepest nesting of `[` and `{` outside JSON strings, in one linear pass (malformed text included). */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth = Math.max(0, depth - 1);
  }
  return deepest;
}

/** Why the arguments text is refused before parsing, in words for the model; null when within bounds. */
export function argsBoundsProblem(text: string): string | null {
  if (text.length > MAX_ARGS_CHARS) {
    return `they are ${text.length} characters long, more than the ${MAX_ARGS_CHARS} allowed. Send smaller arguments.`;
  }
  const depth = nestingDepth(text);
  if (depth > MAX_ARGS_DEPTH) {
    return `they nest ${depth} levels deep, more than the ${MAX_ARGS_DEPTH} allowed. Send flatter arguments.`;
  }
  return null;
}
