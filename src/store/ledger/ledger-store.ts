import { randomUUID } from 'node:crypto';
import type { PlanHashes } from '../../loop/gated-calls.js';
import type { ToolResult } from '../../loop/tool-result.js';
import type { StoreContext } from '../context.js';
import { decode, replyArray } from '../decode.js';
import { StoreError } from '../errors.js';
import { runIdOf } from '../ids.js';
import { hashFromPairs, type LedgerRecord, ledgerFromHash } from '../records.js';
import { scriptWithWait } from '../replicated.js';

export interface BeginExecutionInput {
  approvalId: string;
  /** Fencing token of the caller's lease. */
  fence: number;
  /** Hash of the arguments about to be executed; must equal the approved one (else `args_mismatch`). */
  argsHash: string;
  now: number;
  /**
   * Start again an entry left `executing` or `outcome_unknown` by a crash. Only for tools that declare
   * themselves idempotent. Default false.
   */
  retryUnknown?: boolean;
  /** Hashes of the approved plan and of the plan current now, recorded with the entry (tools with `plan`). */
  plans?: PlanHashes;
}

export interface FinishExecutionInput {
  approvalId: string;
  fence: number;
  outcome: 'succeeded' | 'failed';
  result: ToolResult;
  now: number;
}

export interface LedgerChange {
  /** True when this call changed the entry (or is the resend of the call that did). */
  changed: boolean;
  entry: LedgerRecord;
}

/**
 * The execution ledger of approved calls: approved -> executing -> succeeded | failed, recorded around
 * the side effect so that an approved call runs at most once whatever is duplicated, and a crash in
 * between leaves `executing`, which recovery turns into `outcome_unknown` instead of running it again.
 * Every write checks the caller's fencing token (throws `lease_lost` / `stale_fence`).
 *
 * With `waitReplicas` > 0, `executing` counts only once that many replicas have it (Redis WAIT), so a
 * failover to one of them cannot forget that the side effect started and let it run a second time.
 */
export class LedgerStore {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * `approved | not_started -> executing`. `changed: false` returns the entry as it is (already
   * executing, finished, unknown): do not execute. Throws `not_approved` when the call has no approved
   * decision, and `durability_unconfirmed` when fewer than `waitReplicas` replicas confirmed `executing`
   * within `waitTimeoutMs`: the entry is then put back as `not_started` (nothing ran; a later begin may
   * start it), and if that undo is lost too, a failover leaves `executing`, which recovery reports as
   * `outcome_unknown`: never a second run.
   */
  async begin(input: BeginExecutionInput): Promise<LedgerChange> {
    const { approvalId, fence } = input;
    const { reply, confirmed, replicas } = await scriptWithWait(
      this.ctx,
      'beginExecution',
      [this.ctx.keys.ledger(approvalId), this.ctx.keys.run(runIdOf(approvalId)).lease],
      [
        fence,
        input.now,
        randomUUID(),
        input.retryUnknown ? '1' : '0',
        input.argsHash,
        input.plans?.approved ?? '',
        input.plans?.current ?? '',
      ],
    );
    const began = this.change(
      'beginExecution',
      approvalId,
      replyArray('beginExecution', reply, { approvalId, fence }),
    );
    if (!began.changed || confirmed) return began;
    await this.settle(approvalId, fence, 'not_started', '', input.now);
    const wanted = this.ctx.options.waitReplicas;
    throw new StoreError(
      'durability_unconfirmed',
      `${replicas} of ${wanted} Redis replicas confirmed the executing record of ${approvalId} within ${this.ctx.options.waitTimeoutMs} ms`,
      { approvalId, fence, replicas, wanted },
    );
  }

  /** `executing -> succeeded | failed` with the result; `changed: false` when it was not executing. */
  async finish(input: FinishExecutionInput): Promise<LedgerChange> {
    return this.settle(input.approvalId, input.fence, input.outcome, JSON.stringify(input.result), input.now);
  }

  /**
   * `approved | not_started | plan_blocked -> plan_blocked`: the plan check stopped the call before it
   * began; `changed: false` when it had begun (or ended), which is then left as it is.
   */
  async block(input: {
    approvalId: string;
    fence: number;
    result: ToolResult;
    plans: PlanHashes;
    now: number;
  }): Promise<LedgerChange> {
    const { approvalId, fence } = input;
    const reply = await this.ctx.script(
      'blockExecution',
      [this.ctx.keys.ledger(approvalId), this.ctx.keys.run(runIdOf(approvalId)).lease],
      [fence, JSON.stringify(input.result), input.now, input.plans.approved ?? '', input.plans.current ?? ''],
    );
    return this.change(
      'blockExecution',
      approvalId,
      replyArray('blockExecution', reply, { approvalId, fence }),
    );
  }

  /** Crash recovery: an entry found `executing` by a new lease holder becomes `outcome_unknown`. */
  async markOutcomeUnknown(approvalId: string, fence: number, now: number): Promise<LedgerChange> {
    return this.settle(approvalId, fence, 'outcome_unknown', '', now);
  }

  async get(approvalId: string): Promise<LedgerRecord | null> {
    const hash = await this.ctx.redis.hgetall(this.ctx.keys.ledger(approvalId));
    if (Object.keys(hash).length === 0) return null;
    return decode(`ledger ${approvalId}`, { approvalId }, () => ledgerFromHash(approvalId, hash));
  }

  private async settle(
    approvalId: string,
    fence: number,
    outcome: 'succeeded' | 'failed' | 'outcome_unknown' | 'not_started',
    resultJson: string,
    now: number,
  ): Promise<LedgerChange> {
    const reply = await this.ctx.script(
      'finishExecution',
      [this.ctx.keys.ledger(approvalId), this.ctx.keys.run(runIdOf(approvalId)).lease],
      [fence, outcome, resultJson, now, randomUUID()],
    );
    return this.change(
      'finishExecution',
      approvalId,
      replyArray('finishExecution', reply, { approvalId, fence }),
    );
  }

  private change(script: string, approvalId: string, reply: unknown[]): LedgerChange {
    const [changed, ...pairs] = reply;
    return {
      changed: changed === 1,
      entry: decode(`${script} reply for ${approvalId}`, { approvalId }, () =>
        ledgerFromHash(approvalId, hashFromPairs(pairs)),
      ),
    };
  }
}
