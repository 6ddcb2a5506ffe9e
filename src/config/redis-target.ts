/**
 * Where the processes find Redis: one server (`REDIS_URL`) or a Redis Cluster (`REDIS_CLUSTER_NODES`,
 * its seed nodes; `REDIS_TLS` for TLS to every node). `REDIS_USERNAME` / `REDIS_PASSWORD` authenticate
 * in both cases (for one server they may also sit in the URL, but not in both places). Pure functions:
 * env.ts validates the variables with them, src/queue/connection.ts builds clients from the target.
 */

/** One seed node of a cluster. Exported for the build's .d.ts: env.ts's exported schemas infer it. */
export interface SeedNode {
  host: string;
  port: number;
}

export type RedisTarget =
  | { kind: 'standalone'; url: string; username?: string; password?: string }
  | { kind: 'cluster'; nodes: SeedNode[]; tls: boolean; username?: string; password?: string };

/** The validated variables a target is built from (see env.ts). */
interface RedisVars {
  REDIS_URL: string;
  REDIS_CLUSTER_NODES?: SeedNode[] | undefined;
  REDIS_TLS?: boolean | undefined;
  REDIS_USERNAME?: string | undefined;
  REDIS_PASSWORD?: string | undefined;
}

/** `host:port`: a name or IPv4 address, or an IPv6 address in brackets; a port from 1 to 65535. */
const SEED = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/;

/** Parses `host:port,host:port`; null when any entry is not a `host:port` (or the list is empty). */
export function parseSeedNodes(text: string): SeedNode[] | null {
  const entries = text.split(',').map((entry) => entry.trim());
  const nodes: SeedNode[] = [];
  for (const entry of entries) {
    const match = SEED.exec(entry);
    const port = Number(match?.[2]);
    if (!match?.[1] || port < 1 || port > 65_535) return null;
    nodes.push({ host: match[1].replace(/^\[|\]$/g, ''), port });
  }
  return nodes.length > 0 ? nodes : null;
}

/**
 * Problems of the combination of the Redis variables (each one already valid on its own), by variable.
 * `explicitUrl` tells whether REDIS_URL was set (it has a default).
 */
export function redisVarProblems(vars: RedisVars, explicitUrl: boolean): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  const cluster = vars.REDIS_CLUSTER_NODES !== undefined;
  if (cluster && explicitUrl) {
    problems.push([
      'REDIS_URL',
      'set together with REDIS_CLUSTER_NODES; give one: REDIS_URL for one server, REDIS_CLUSTER_NODES for a cluster (with REDIS_TLS, REDIS_USERNAME, REDIS_PASSWORD)',
    ]);
  }
  if (!cluster && vars.REDIS_TLS !== undefined) {
    problems.push([
      'REDIS_TLS',
      'applies to REDIS_CLUSTER_NODES only; for one server use a rediss:// REDIS_URL',
    ]);
  }
  if (!cluster) {
    const url = new URL(vars.REDIS_URL);
    if (vars.REDIS_PASSWORD !== undefined && url.password !== '') {
      problems.push(['REDIS_PASSWORD', 'set, but REDIS_URL carries a password too; give it in one place']);
    }
    if (vars.REDIS_USERNAME !== undefined && url.username !== '') {
      problems.push(['REDIS_USERNAME', 'set, but REDIS_URL names a user too; give it in one place']);
    }
  }
  return problems;
}

/** The target the validated variables describe. */
export function redisTarget(vars: RedisVars): RedisTarget {
  const auth = {
    ...(vars.REDIS_USERNAME !== undefined ? { username: vars.REDIS_USERNAME } : {}),
    ...(vars.REDIS_PASSWORD !== undefined ? { password: vars.REDIS_PASSWORD } : {}),
  };
  if (vars.REDIS_CLUSTER_NODES !== undefined) {
    return { kind: 'cluster', nodes: vars.REDIS_CLUSTER_NODES, tls: vars.REDIS_TLS === true, ...auth };
  }
  return { kind: 'standalone', url: vars.REDIS_URL, ...auth };
}

/** The target for messages: seed nodes or the URL, never a password. */
export function describeTarget(target: RedisTarget): string {
  if (target.kind === 'cluster') {
    const nodes = target.nodes.map((n) =>
      n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`,
    );
    return `Redis Cluster ${nodes.join(',')}${target.tls ? ' (TLS)' : ''}`;
  }
  return `Redis at ${displayUrl(target.url)}`;
}

/** A URL with its password masked, for messages. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** The variable an operator fixes when the target cannot be reached. */
export const targetVariable = (target: RedisTarget): string =>
  target.kind === 'cluster' ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
