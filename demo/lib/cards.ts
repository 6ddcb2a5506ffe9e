/**
 * Recognising loopgate's messages in the stand-in Slack by what they carry, as a person would: the
 * progress placeholder (edited in place, deleted at the end) and approval cards (Approve / Reject
 * buttons whose value is the approval id).
 */
import { z } from 'zod';
import { ACTION_IDS } from '../../src/slack/ids.js';

const button = z.looseObject({ type: z.literal('button'), action_id: z.string(), value: z.string() });
const actionsBlock = z.looseObject({ type: z.literal('actions'), elements: z.array(z.unknown()) });

export interface Button {
  actionId: string;
  value: string;
}

export function buttonsOf(blocks: readonly unknown[] | undefined): Button[] {
  return (blocks ?? []).flatMap((raw) => {
    const parsed = actionsBlock.safeParse(raw);
    if (!parsed.success) return [];
    return parsed.data.elements.flatMap((el) => {
      const b = button.safeParse(el);
      return b.success ? [{ actionId: b.data.action_id, value: b.data.value }] : [];
    });
  });
}

/** The approval id of a card still waiting for a decision (it has an Approve button), else undefined. */
export function pendingApprovalId(blocks: readonly unknown[] | undefined): string | undefined {
  return buttonsOf(blocks).find((b) => b.actionId === ACTION_IDS.approve)?.value;
}

/** True for any approval card, decided or not (a Details button beside a header "…: <tool>"). */
export function isApprovalCard(blocks: readonly unknown[] | undefined): boolean {
  const first = z.looseObject({ type: z.literal('header') }).safeParse(blocks?.[0]);
  return first.success && buttonsOf(blocks).some((b) => b.actionId === ACTION_IDS.details);
}

/** The progress placeholder's text starts with this emoji (src/slack/progress.ts). */
export const PLACEHOLDER_EMOJI = ':hourglass_flowing_sand:';

export function isPlaceholderText(text: unknown): boolean {
  return typeof text === 'string' && text.startsWith(PLACEHOLDER_EMOJI);
}
