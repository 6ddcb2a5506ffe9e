import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Grant } from '../../policy/grants.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { StoreContext } from '../context.js';
import { decode } from '../decode.js';

const grantSchema = z.strictObject({
  grantId: z.string(),
  tool: z.string(),
  rule: z.string(),
  values: z.record(z.string(), z.unknown()),
  scope: z.enum(['thread', 'run']),
  runId: z.string(),
  teamId: z.string(),
  channelId: z.string(),
  threadTs: z.string(),
  grantedBy: z.string(),
  grantedAt: z.number(),
  expiresAt: z.number(),
  approvalId: z.string(),
  approvers: z.strictObject({ users: z.array(z.string()), groups: z.array(z.string()) }),
});

/** `<team>/<channel>/<threadTs>/<grantId>`: where a grant lives, as revoke buttons and indexes carry it. */
export const grantRef = (g: Pick<Grant, 'teamId' | 'channelId' | 'threadTs' | 'grantId'>) =>
  `${g.teamId}/${g.channelId}/${g.threadTs}/${g.grantId}`;

const REF = /^([A-Za-z0-9_.-]{1,64})\/([A-Za-z0-9_.-]{1,64})\/([0-9.]{1,40})\/(g-[0-9a-f]{12})$/;

export function parseGrantRef(ref: string) {
  const m = REF.exec(ref);
  return m
    ? { teamId: m[1] as string, channelId: m[2] as string, threadTs: m[3] as string, grantId: m[4] as string }
    : null;
}

/**
 * Grants, each a field of its thread's `grants` hash (the thread's own hash tag: it never leaves the
 * thread's slot, and a lookup reads only that thread's grants), plus an index per grantor and per channel
 * (zsets by expiry, single-key commands, stale entries dropped by readers) for listing and revoking.
 */
export class GrantStore {
  constructor(
    private readonly ctx: StoreContext,
    private readonly audit: AuditLog,
  ) {}

  private userIndex(teamId: string, userId: string) {
    return `${this.ctx.keys.prefix}:idx:grants:user:${teamId}:${userId}`;
  }
  private channelIndex(teamId: string, channelId: string) {
    return `${this.ctx.keys.prefix}:idx:grants:channel:${teamId}:${channelId}`;
  }
  private threadKey(g: Pick<Grant, 'teamId' | 'channelId' | 'threadTs'>) {
    return this.ctx.keys.thread(g.teamId, g.channelId, g.threadTs).grants;
  }

  /** Stores a new grant (its id is made here), indexes it and audits it. */
  async create(input: Omit<Grant, 'grantId'>): Promise<Grant> {
    const grant: Grant = { ...input, grantId: `g-${randomBytes(6).toString('hex')}` };
    const key = this.threadKey(grant);
    const ref = grantRef(grant);
    await this.ctx.redis.hset(key, grant.grantId, JSON.stringify(grant));
    const ttl = await this.ctx.redis.pttl(key);
    const wanted = grant.expiresAt - Date.now() + 60_000;
    if (ttl < wanted) await this.ctx.redis.pexpire(key, Math.max(1, wanted));
    await Promise.all([
      this.ctx.redis.zadd(this.userIndex(grant.teamId, grant.grantedBy), grant.expiresAt, ref),
      this.ctx.redis.zadd(this.channelIndex(grant.teamId, grant.channelId), grant.expiresAt, ref),
    ]);
    await this.audit.appendGrant(grant, 'grant', grant.grantedBy, grant.grantedAt);
    return grant;
  }

  /** The grants of a thread still in force at `now`. */
  async inThread(
    thread: { teamId: string; channelId: string; threadTs: string },
    now: number,
  ): Promise<Grant[]> {
    const hash = await this.ctx.redis.hgetall(this.threadKey(thread));
    return Object.entries(hash)
      .map(([id, json]) => decode(`grant ${id}`, { grantId: id }, () => grantSchema.parse(JSON.parse(json))))
      .filter((g) => g.expiresAt > now);
  }

  async get(ref: string): Promise<Grant | null> {
    const at = parseGrantRef(ref);
    if (!at) return null;
    const json = await this.ctx.redis.hget(this.threadKey(at), at.grantId);
    return json ? decode(`grant ${at.grantId}`, at, () => grantSchema.parse(JSON.parse(json))) : null;
  }

  /** Grants in force granted by a person, or in a channel, soonest expiry first. */
  async list(
    by: { user: { teamId: string; userId: string } } | { channel: { teamId: string; channelId: string } },
    now: number,
  ): Promise<Grant[]> {
    const index =
      'user' in by
        ? this.userIndex(by.user.teamId, by.user.userId)
        : this.channelIndex(by.channel.teamId, by.channel.channelId);
    await this.ctx.redis.zremrangebyscore(index, '-inf', now);
    const refs = await this.ctx.redis.zrangebyscore(index, now, '+inf', 'LIMIT', 0, 50);
    const found = await Promise.all(refs.map((ref) => this.get(ref)));
    const gone = refs.filter((_, i) => !found[i]);
    if (gone.length > 0) await this.ctx.redis.zrem(index, ...gone);
    return found.filter((g): g is Grant => g !== null && g.expiresAt > now);
  }

  /** Removes a grant; false when it was gone already. Audited. */
  async revoke(grant: Grant, by: string, now: number): Promise<boolean> {
    const removed = await this.ctx.redis.hdel(this.threadKey(grant), grant.grantId);
    const ref = grantRef(grant);
    await Promise.all([
      this.ctx.redis.zrem(this.userIndex(grant.teamId, grant.grantedBy), ref),
      this.ctx.redis.zrem(this.channelIndex(grant.teamId, grant.channelId), ref),
    ]);
    if (removed === 1) await this.audit.appendGrant(grant, 'grant_revoked', by, now);
    return removed === 1;
  }
}
