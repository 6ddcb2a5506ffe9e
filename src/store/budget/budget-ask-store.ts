import { z } from 'zod';
import type { BudgetAsk } from '../../loop/budget-asks.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { StoreContext } from '../context.js';
import { badReply, decode, replyArray } from '../decode.js';
import { hashFromPairs } from '../records.js';

export const budgetAskStatusSchema = z.enum(['pending', 'granted', 'refused', 'expired', 'cancelled']);
export type BudgetAskStatus = z.infer<typeof budgetAskStatusSchema>;

const num = z.coerce.number();
const increase = z.strictObject({
  steps: z.number().optional(),
  deadlineMs: z.number().optional(),
  tokens: z.number().optional(),
  costUsd: z.number().optional(),
});

/** A run's ask for more budget as stored (one record per run: its latest round). */
export const budgetAskRecordSchema = z.strictObject({
  runId: z.string(),
  round: num,
  reason: z.enum(['max_steps', 'deadline', 'token_budget', 'cost_budget']),
  offer: z.string().transform((text) => increase.parse(JSON.parse(text))),
  message: z.string(),
  requester: z.string(),
  createdAt: num,
  expiresAt: num,
  status: budgetAskStatusSchema,
  decidedBy: z.string().optional(),
  decidedAt: num.optional(),
  cardChannel: z.string().optional(),
  cardTs: z.string().optional(),
});
export type BudgetAskRecord = z.output<typeof budgetAskRecordSchema>;

/** What a decision did: `decided` when this answer won, `late` when it came after the expiry (expired now). */
export type BudgetAnswer = { outcome: 'decided' | 'unchanged' | 'late'; record: BudgetAskRecord };

const OUTCOMES = { 1: 'decided', 0: 'unchanged', 2: 'late' } as const;

/**
 * The runs' asks for more budget (src/loop/budget-extension.ts), in the run's slot: created by the worker
 * when a run pauses at a budget, answered once by compare-and-set (decideBudgetAsk-1.lua) by a click or
 * the expiry timer. Every answer is audited.
 */
export class BudgetAskStore {
  constructor(
    private readonly ctx: StoreContext,
    private readonly audit: AuditLog,
  ) {}

  /** Stores the ask of a paused run (idempotent per round); null when the run is gone. */
  async create(
    runId: string,
    ask: BudgetAsk,
    requester: string,
    expiresAt: number,
  ): Promise<BudgetAskRecord | null> {
    const keys = this.ctx.keys.run(runId);
    const reply = await this.ctx.script(
      'createBudgetAsk',
      [keys.header, keys.budgetAsk],
      [ask.round, ask.reason, JSON.stringify(ask.offer), ask.message, requester, ask.at, expiresAt],
    );
    if (reply === -1) return null;
    return this.parse(runId, replyArray('createBudgetAsk', reply, { runId }));
  }

  /**
   * Answers round `round` of the run's ask (first answer wins); throws StoreError `not_found` when the
   * run has no ask, `stale_round` when its ask is of another round.
   */
  async decide(input: {
    runId: string;
    round: number;
    decision: Exclude<BudgetAskStatus, 'pending'>;
    by?: string;
    now: number;
  }): Promise<BudgetAnswer> {
    const { runId, round } = input;
    const reply = await this.ctx.script(
      'decideBudgetAsk',
      [this.ctx.keys.run(runId).budgetAsk],
      [round, input.decision, input.by ?? '', input.now],
    );
    const [code, ...pairs] = replyArray('decideBudgetAsk', reply, { runId, round });
    const outcome = OUTCOMES[code as keyof typeof OUTCOMES];
    if (outcome === undefined) throw badReply('decideBudgetAsk', reply, { runId, round });
    const record = this.parse(runId, pairs);
    if (outcome !== 'unchanged') await this.audit.appendBudgetAnswer(record);
    return { outcome, record };
  }

  /** Remembers where the ask's card is (only on the round it was posted for). */
  async setCard(runId: string, round: number, card: { channel: string; ts: string }): Promise<void> {
    const key = this.ctx.keys.run(runId).budgetAsk;
    const current = await this.get(runId);
    if (current?.round !== round) return;
    await this.ctx.script('updateIfExists', [key], ['cardChannel', card.channel, 'cardTs', card.ts]);
  }

  async get(runId: string): Promise<BudgetAskRecord | null> {
    const hash = await this.ctx.redis.hgetall(this.ctx.keys.run(runId).budgetAsk);
    if (Object.keys(hash).length === 0) return null;
    return decode(`budget ask of ${runId}`, { runId }, () => budgetAskRecordSchema.parse({ ...hash, runId }));
  }

  private parse(runId: string, pairs: unknown[]): BudgetAskRecord {
    return decode(`budget ask of ${runId}`, { runId }, () =>
      budgetAskRecordSchema.parse({ ...hashFromPairs(pairs as string[]), runId }),
    );
  }
}
