import { describe, expect, it } from 'vitest';
import type { ActionsBlock, Button } from '../../src/slack/block-kit.js';
import { feedbackBlock, finalAnswerMessages, parseFeedbackValue } from '../../src/slack/final-answer.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { blockProblems } from '../fakes/slack-api-server.js';
import { expectValidMessageBlocks, pings } from './block-checks.js';

describe('finalAnswerMessages', () => {
  it('puts the answer in a markdown block with a text fallback and a Details button', () => {
    const [message, ...rest] = finalAnswerMessages({
      runId: 'run_1',
      parts: ['**Payments** is healthy.'],
      stopReason: 'completed',
    });
    expect(rest).toEqual([]);
    expect(message?.text).toBe('**Payments** is healthy.');
    expect(message?.blocks[0]).toEqual({ type: 'markdown', text: '**Payments** is healthy.' });
    expect(message?.blocks.some((b) => b.type === 'context')).toBe(false);
    const details = message?.blocks.find((b): b is ActionsBlock => b.type === 'actions')
      ?.elements[0] as Button;
    expect(details).toMatchObject({ action_id: ACTION_IDS.details, value: 'run_1' });
  });

  it('splits an answer past 12,000 characters into several messages, Details only on the last', () => {
    const paragraph = 'p'.repeat(999);
    const answer = Array.from({ length: 30 }, () => paragraph).join('\n\n');
    const messages = finalAnswerMessages({ runId: 'r', parts: [answer], stopReason: 'completed' });
    expect(messages.length).toBe(3);
    for (const [i, m] of messages.entries()) {
      expectValidMessageBlocks(m.blocks);
      const markdown = m.blocks.filter((b) => b.type === 'markdown');
      expect(markdown).toHaveLength(1);
      expect(markdown[0]?.type === 'markdown' && markdown[0].text.length).toBeLessThanOrEqual(12_000);
      expect(m.text.length).toBeLessThanOrEqual(40_000);
      expect(m.blocks.some((b) => b.type === 'actions')).toBe(i === messages.length - 1);
    }
  });

  it('states why the run stopped when it did not complete, preferring the run’s own sentence', () => {
    const generic = finalAnswerMessages({ runId: 'r', parts: ['partial'], stopReason: 'max_steps' });
    expect(JSON.stringify(generic)).toContain('maximum number of steps');
    const own = finalAnswerMessages({
      runId: 'r',
      parts: ['partial'],
      stopReason: 'deadline',
      stopMessage: 'Stopped after 5 minutes <!here>.',
    });
    expect(JSON.stringify(own)).toContain('Stopped after 5 minutes &lt;!here&gt;.');
  });

  it('posts the stop reason alone when there is no answer', () => {
    const [message, ...rest] = finalAnswerMessages({ runId: 'r', parts: [], stopReason: 'model_error' });
    expect(rest).toEqual([]);
    expect(message?.text).toContain('language model');
    expect(message?.blocks.map((b) => b.type)).toEqual(['section', 'actions']);
  });

  it('does not let the model broadcast to the channel', () => {
    const messages = finalAnswerMessages({
      runId: 'r',
      parts: ['<!channel> please look, <!subteam^S1|@sre>, ask <@U123>'],
      stopReason: 'completed',
    });
    expect(pings(messages)).toEqual(['<@U123>', '<@U123>']);
  });

  it('carries the feedback buttons under an answer (last message only, before Details), none without one', () => {
    const paragraph = 'p'.repeat(999);
    const answer = Array.from({ length: 30 }, () => paragraph).join('\n\n');
    const messages = finalAnswerMessages({ runId: 'r-run1', parts: [answer], stopReason: 'max_steps' });
    const types = messages.map((m) => m.blocks.map((b) => b.type));
    expect(types.at(-1)).toEqual(['markdown', 'context', 'context_actions', 'actions']);
    expect(types.slice(0, -1).flat()).not.toContain('context_actions');
    expect(messages.at(-1)?.blocks[2]).toEqual(feedbackBlock('r-run1'));
    for (const m of messages) expect(blockProblems(m.blocks, 'message')).toEqual([]);
    const [none] = finalAnswerMessages({ runId: 'r', parts: [], stopReason: 'cancelled' });
    expect(none?.blocks.map((b) => b.type)).not.toContain('context_actions');
  });

  it('feedback values name the value and the run, and read back; anything else is refused', () => {
    const block = feedbackBlock('r-run1') as unknown as {
      elements: Array<Record<string, { value: string }>>;
    };
    const { positive_button: good, negative_button: bad } = block.elements[0]!;
    expect(parseFeedbackValue(good!.value)).toEqual({ value: 'good', runId: 'r-run1' });
    expect(parseFeedbackValue(bad!.value)).toEqual({ value: 'bad', runId: 'r-run1' });
    expect(parseFeedbackValue('meh:r-run1')).toBeNull();
    expect(blockProblems([{ ...block, elements: [{ type: 'feedback_buttons' }] }], 'message')).not.toEqual(
      [],
    );
  });
});
