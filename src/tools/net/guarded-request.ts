/**
 * HTTP to allowlisted URLs only. Every hop (the first URL and each redirect target) must match an
 * allowlisted prefix, and its host must resolve only to public addresses unless that prefix says
 * `allowPrivate`; the connection is then pinned to the checked addresses. Secret headers belong to a
 * prefix and are sent only to URLs under it, never along a redirect to another prefix.
 */
import { isIP } from 'node:net';
import { PrivateAddressError, ToolError, UrlNotAllowedError } from '../errors.js';
import { nonPublicKind } from './address-rules.js';
import { exchange, type HttpReply } from './http-client.js';
import type { Lookup, ResolvedAddress } from './lookup.js';
import type { TimeLimit } from './time-limit.js';
import { findAllowEntry } from './url-allowlist.js';

/** An allowlisted prefix as a tool holds it at run time: secret header values already resolved. */
export interface AllowRule {
  prefix: string;
  allowPrivate: boolean;
  /** Header values read from the environment at start-up; never logged, previewed or returned. */
  headers: Record<string, string>;
}

interface GuardedRequest {
  method: string;
  url: string;
  /** Non-secret headers set by the tool (content type, idempotency key). */
  headers?: Record<string, string>;
  body?: string;
  limit: TimeLimit;
  maxBytes: number;
  /**
   * Redirects to follow, each checked like the first URL and re-sent with the same method and body (so
   * meant for GET); 0 returns the 3xx reply itself.
   */
  maxRedirects: number;
}

interface Guard {
  rules: readonly AllowRule[];
  lookup: Lookup;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function parseUrl(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new ToolError('invalid_url', `${text} is not a valid URL`);
  }
}

async function resolveChecked(url: URL, rule: AllowRule, lookup: Lookup): Promise<ResolvedAddress[]> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await lookup(host);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      // EAI_AGAIN is the resolver's "try again later"; a name that does not exist stays permanent.
      throw new ToolError(
        'dns_failed',
        `cannot resolve ${host}${typeof code === 'string' ? ` (${code})` : ''}`,
        {
          transient: code === 'EAI_AGAIN',
        },
      );
    }
    if (addresses.length === 0) throw new ToolError('dns_failed', `${host} has no address`);
  }
  if (!rule.allowPrivate) {
    for (const { address } of addresses) {
      const kind = nonPublicKind(address);
      if (kind !== null) throw new PrivateAddressError(host, address, kind);
    }
  }
  return addresses;
}

/** Checks one URL against the allowlist and the address rules; returns the rule and pinned addresses. */
async function checkTarget(
  url: URL,
  guard: Guard,
  via?: string,
): Promise<{ rule: AllowRule; addresses: ResolvedAddress[] }> {
  const rule = findAllowEntry(url, guard.rules);
  if (!rule) {
    throw new UrlNotAllowedError(
      url.href,
      guard.rules.map((r) => r.prefix),
      via,
    );
  }
  return { rule, addresses: await resolveChecked(url, rule, guard.lookup) };
}

/** Sends the request, following at most `maxRedirects` redirects, each one checked. */
export async function guardedRequest(req: GuardedRequest, guard: Guard): Promise<HttpReply> {
  let url = parseUrl(req.url);
  let via: string | undefined;
  for (let hop = 0; ; hop++) {
    const { rule, addresses } = await checkTarget(url, guard, via);
    const headers = { ...req.headers, ...rule.headers };
    const reply = await exchange({
      method: req.method,
      url,
      headers,
      body: req.body,
      limit: req.limit,
      maxBytes: req.maxBytes,
      addresses,
    });
    const location = reply.headers.location;
    if (!REDIRECTS.has(reply.status) || location === undefined || req.maxRedirects === 0) return reply;
    if (hop >= req.maxRedirects) {
      throw new ToolError('too_many_redirects', `${req.url} redirected more than ${req.maxRedirects} times`);
    }
    via = url.href;
    url = parseUrl(location, url);
  }
}
