/**
 * The one form of a URL a tool shows, hashes for approval and sends: the WHATWG parser's `href`. Input
 * that the parser would change in a way a reader misses is refused instead, so what a person approves is
 * the string that is requested: dot segments (`/a/../b`, `%2e%2e`) that the parser resolves away, tabs
 * and newlines it silently drops, backslashes it turns into `/`, and encoded separators (`%2F`, `%5C`) in
 * the path that a server may decode into segments of their own.
 */
import { z } from 'zod';

/** Control characters (TAB, LF and CR among them, which the URL parser removes without a trace). */
const CONTROL = /\p{Cc}/u;
const ENCODED_SEPARATOR = /%(?:2f|5c)/i;

/** The raw path as the model wrote it: from the first `/` after the authority to a `?` or `#`. */
function rawPath(text: string): string {
  const authority = text.indexOf('//');
  const afterAuthority = text.slice(authority === -1 ? 0 : authority + 2);
  const start = afterAuthority.search(/[/?#]/);
  if (start === -1 || afterAuthority[start] !== '/') return '';
  const rest = afterAuthority.slice(start);
  const end = rest.search(/[?#]/);
  return end === -1 ? rest : rest.slice(0, end);
}

function isDotSegment(segment: string): boolean {
  const decoded = segment.toLowerCase().replaceAll('%2e', '.');
  return decoded === '.' || decoded === '..';
}

/** Why `text` is refused, or undefined when it is a plain absolute http(s) URL. */
function urlProblem(text: string): string | undefined {
  if (CONTROL.test(text)) return 'contains a control character (such as a tab or a line break); remove it';
  if (text.includes('\\')) return 'contains a backslash; use / to separate path segments';
  if (!URL.canParse(text)) return 'is not an absolute URL';
  const { protocol } = new URL(text);
  if (protocol !== 'http:' && protocol !== 'https:') return 'must start with http:// or https://';
  const path = rawPath(text);
  if (path.split('/').some(isDotSegment)) {
    return 'contains a . or .. path segment (also as %2e); write the path it is meant to reach';
  }
  if (ENCODED_SEPARATOR.test(path)) return 'contains an encoded / or \\ (%2F, %5C) in its path';
  return undefined;
}

/** A tool's URL argument: validated as above and replaced by its normalised `href`. */
export const requestUrl = z.string().transform((text, ctx) => {
  const problem = urlProblem(text);
  if (problem === undefined) return new URL(text).href;
  ctx.addIssue({ code: 'custom', message: `the URL ${problem}` });
  return z.NEVER;
});
