/**
 * URL prefixes a tool may reach. A prefix matches on the parsed URL, never on raw text: the scheme, host
 * and port must be equal, and the path must equal the prefix's path or continue it at a `/` boundary.
 * So `https://status.example/api` allows `/api` and `/api/x` but neither `/api-admin` nor
 * `https://status.example.evil.test/`, and dot segments (`/api/../admin`, `%2e%2e`) are resolved by the
 * URL parser before matching.
 */

/** Parses a prefix: http(s), a host, no credentials, no query or fragment. Undefined when invalid. */
export function normalisePrefix(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname === '' || url.username !== '' || url.password !== '') return undefined;
  if (url.search !== '' || url.hash !== '') return undefined;
  return url.href;
}

function pathMatches(path: string, prefixPath: string): boolean {
  if (prefixPath.endsWith('/')) return path.startsWith(prefixPath);
  return path === prefixPath || path.startsWith(`${prefixPath}/`);
}

/** The entry allowing `url`; with several, the longest (most specific) prefix wins. */
export function findAllowEntry<E extends { prefix: string }>(url: URL, entries: readonly E[]): E | undefined {
  if (url.username !== '' || url.password !== '') return undefined;
  let best: E | undefined;
  for (const entry of entries) {
    const prefix = new URL(entry.prefix);
    if (prefix.protocol !== url.protocol || prefix.host !== url.host) continue;
    if (!pathMatches(url.pathname, prefix.pathname)) continue;
    if (!best || entry.prefix.length > best.prefix.length) best = entry;
  }
  return best;
}
