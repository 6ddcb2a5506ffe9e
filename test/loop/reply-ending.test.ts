import { describe, expect, it } from 'vitest';
import type { ModelPort, ModelReply, ModelRequest } from '../../src/loop/model-port.js';
import { runUntilPause } from '../../src/loop/run.js';
import { call, deps, newRun } from '../support/engine.js';

/** A model answering from a list of replies, recording what it was sent. */
function replies(list: Array<Partial<ModelReply>>): ModelPort & { requests: ModelRequest[] } {
  const queue = [...list];
  const requests: ModelRequest[] = [];
  return {
    requests,
    async complete(req) {
      requests.push({ ...req, messages: [...req.messages] });
      const next = queue.shift();
      if (!next) throw new Error('no reply left');
      return {
        content: null,
        toolCalls: [],
        model: 'm',
        usage: { inputTokens: 5, outputTokens: 5 },
        ...next,
      };
    },
  };
}

const cutCall = (id: string) => ({ id, name: 'restart', arguments: '{"service": "paym' });

describe('a reply cut off at the token limit', () => {
  it('a cut tool call is not executed; the model is asked once to be shorter, and its next reply counts', async () => {
    const model = replies([
      { toolCalls: [cutCall('c1')], finishReason: 'length' },
      { content: 'Payments is healthy.', finishReason: 'stop' },
    ]);
    const { deps: d, executed, events } = deps(model);
    const out = await runUntilPause(newRun({ maxReplyTokens: 64 }), d);
    expect(out.type).toBe('final');
    expect(out.state.stopReason).toBe('completed');
    expect(out.state.answer).toEqual(['Payments is healthy.']);
    expect(executed).toEqual([]);
    expect(events.some((e) => e.type === 'approval_needed')).toBe(false);
    const note = model.requests[1]!.messages.at(-1)!;
    expect(note).toMatchObject({
      role: 'user',
      content: expect.stringContaining('cut off at the output token limit of 64 tokens'),
    });
    // The cut call never entered the history, so nothing is left unanswered.
    expect(model.requests[1]!.messages.some((m) => m.role === 'assistant')).toBe(false);
  });

  it('cut twice in a row: the person is told the answer was cut off at the token limit, not that it was empty', async () => {
    const model = replies([
      { content: 'The long answer begins', finishReason: 'length' },
      { content: '', finishReason: 'length' },
    ]);
    const { deps: d } = deps(model);
    const out = await runUntilPause(newRun({ maxReplyTokens: 32 }), d);
    expect(out.state.stopReason).toBe('output_limit');
    expect(out.state.status).toBe('failed');
    expect(out.state.stopMessage).toBe(
      "The answer was cut off at the model's output token limit (32 tokens), and again when I asked for a shorter one, so I have no complete answer. Try asking for less at once.",
    );
    expect(out.state.stopMessage).not.toMatch(/empty|plain text|\[loopgate\]/);
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.messages.at(-2)).toEqual({
      role: 'assistant',
      content: 'The long answer begins',
    });
  });

  it('a cut after an earlier recovered cut is asked about again (once per cut)', async () => {
    const model = replies([
      { content: 'x', finishReason: 'length' },
      { toolCalls: [{ id: 'a', name: 'lookup', arguments: '{"service":"payments"}' }] },
      { content: 'y', finishReason: 'length' },
      { content: 'Fine.' },
    ]);
    const { deps: d } = deps(model);
    const out = await runUntilPause(newRun(), d);
    expect(out.state.stopReason).toBe('completed');
    expect(model.requests).toHaveLength(4);
  });
});

describe('content filter and refusals', () => {
  it('a filtered reply is reported as filtered', async () => {
    const { deps: d } = deps(replies([{ content: '', finishReason: 'content_filter' }]));
    const out = await runUntilPause(newRun(), d);
    expect(out.state).toMatchObject({ stopReason: 'content_filter', status: 'failed' });
    expect(out.state.stopMessage).toContain('content filter stopped the answer');
  });

  it('a refusal is reported as the model declining, with its words', async () => {
    const { deps: d, executed } = deps(
      replies([{ content: null, refusal: 'I can’t help with that.', toolCalls: [] }]),
    );
    const out = await runUntilPause(newRun(), d);
    expect(out.state).toMatchObject({ stopReason: 'refused', status: 'failed' });
    expect(out.state.stopMessage).toBe('The model declined to answer: “I can’t help with that.”');
    expect(executed).toEqual([]);
  });
});

describe('stop messages are written for the person', () => {
  it('an answer refused by the checks does not show the correction sent to the model', async () => {
    const { deps: d } = deps(replies([{ content: '' }, { content: ' ' }, { content: '' }]));
    const out = await runUntilPause(newRun({ maxAnswerRetries: 2 }), d);
    expect(out.state.stopReason).toBe('validation_failed');
    expect(out.state.stopMessage).toBe(
      "I could not give an answer that passed loopgate's checks (3 tries): the model gave no answer text.",
    );
  });

  it('unchanged: a complete reply with tool calls still runs them', async () => {
    const { deps: d, executed } = deps(
      replies([
        {
          toolCalls: [{ id: 'a', ...call('lookup', { service: 'x' }), arguments: '{"service":"x"}' }],
          finishReason: 'tool_calls',
        },
        { content: 'ok' },
      ]),
    );
    await runUntilPause(newRun(), d);
    expect(executed).toHaveLength(1);
  });
});
