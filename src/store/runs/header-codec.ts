import { z } from 'zod';
import { RUN_STATE_VERSION, type RunState, withEnding } from '../../loop/run-state.js';
import { approvalIdFor } from '../ids.js';
import {
  type RunHeaderState,
  runHeaderStateSchema,
  runStatusSchema,
  stopReasonSchema,
} from './run-state-schema.js';

/**
 * How a RunState's header (everything but messages and evidence) is spread over the header hash
 * (keys.ts), so that a step rewrites only what a step can change:
 * - `state`: JSON of the parts set once when the run is created (requester, question, limits, and for
 *   a sub-agent's run its `agent` link);
 * - `progress`: JSON of the parts a step changes (usage, turn, actions, rejected, brakes,
 *   answerRetries, answer, stopMessage, context, subagents, budgetAsk, extensions);
 * - the scalars status, step, stopReason ('' for none), createdAt, updatedAt in hash fields of their
 *   own (the run index and `/loopgate status` read them without parsing JSON);
 * - version in `v`, runId in the key.
 */

const fixedPartSchema = runHeaderStateSchema.pick({
  requester: true,
  question: true,
  limits: true,
  agent: true,
});
const changingPartSchema = runHeaderStateSchema.pick({
  usage: true,
  turn: true,
  actions: true,
  rejected: true,
  brakes: true,
  answerRetries: true,
  answer: true,
  stopMessage: true,
  context: true,
  subagents: true,
  budgetAsk: true,
  extensions: true,
});

type FixedPart = z.output<typeof fixedPartSchema>;
type ChangingPart = z.output<typeof changingPartSchema>;
type Placed =
  | 'version'
  | 'runId'
  | 'status'
  | 'step'
  | 'stopReason'
  | 'createdAt'
  | 'updatedAt'
  | keyof FixedPart
  | keyof ChangingPart;

/** Fails to compile when RunState gains a header field that none of the parts above stores. */
export const headerPartsCoverRunState: [Exclude<keyof RunHeaderState, Placed>] extends [never]
  ? true
  : false = true;

/** JSON of the parts of a run that never change after createRun. */
export function fixedJson(state: RunHeaderState): string {
  const part: FixedPart = {
    requester: state.requester,
    question: state.question,
    limits: state.limits,
    ...(state.agent ? { agent: state.agent } : {}),
  };
  return JSON.stringify(part);
}

/** JSON of the parts of a run that a step may change. */
export function changingJson(state: RunHeaderState): string {
  const part: ChangingPart = {
    usage: state.usage,
    turn: state.turn,
    actions: state.actions,
    rejected: state.rejected,
    brakes: state.brakes,
    answerRetries: state.answerRetries,
    answer: state.answer,
    stopMessage: state.stopMessage,
    ...(state.context ? { context: state.context } : {}),
    ...(state.subagents ? { subagents: state.subagents } : {}),
    ...(state.budgetAsk ? { budgetAsk: state.budgetAsk } : {}),
    ...(state.extensions ? { extensions: state.extensions } : {}),
  };
  return JSON.stringify(part);
}

/**
 * The `pause` field: ids of the approvals of the turn's gated calls still waiting for a decision,
 * space-separated ('' when none). Loading a run reads these approvals in the same round trip.
 */
export function pauseField(state: RunState): string {
  return (state.turn?.pending ?? []).map((call) => approvalIdFor(state.runId, call.toolCallId)).join(' ');
}

const numberField = z.string().min(1).pipe(z.coerce.number());
const scalarsSchema = z.object({
  status: runStatusSchema,
  step: numberField,
  stopReason: stopReasonSchema.nullable(),
  createdAt: numberField,
  updatedAt: numberField,
});

/** Reassembles the header of run `runId` from its hash; throws on anything it cannot read. */
export function headerFromHash(runId: string, hash: Readonly<Record<string, string>>) {
  const scalars = scalarsSchema.parse({
    status: hash.status,
    step: hash.step,
    stopReason: hash.stopReason ? hash.stopReason : null,
    createdAt: hash.createdAt,
    updatedAt: hash.updatedAt,
  });
  const header: RunHeaderState = {
    version: RUN_STATE_VERSION,
    runId,
    ...scalars,
    ...fixedPartSchema.parse(JSON.parse(hash.state ?? '')),
    ...changingPartSchema.parse(JSON.parse(hash.progress ?? '')),
  };
  // Status and stop reason live in fields of their own, the stop message in `progress`: they must agree.
  return withEnding(header);
}
