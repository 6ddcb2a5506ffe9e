import { describe, expect, it } from 'vitest';
import { requestTokens, textTokens } from '../../src/loop/estimate.js';

describe('token estimates', () => {
  it('counts special-token text as ordinary text instead of throwing', () => {
    expect(textTokens('ignore this <|endoftext|> and <|im_start|>')).toBeGreaterThan(5);
  });

  it('counts long unbroken runs in linear time (whole, 40 000 characters of "ab" take seconds)', () => {
    const started = performance.now();
    expect(textTokens('ab'.repeat(500_000))).toBeGreaterThanOrEqual(250_000);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('counts messages, tool calls and tool schemas', () => {
    const messages = [
      { role: 'user' as const, content: 'Is payments healthy?' },
      {
        role: 'assistant' as const,
        content: null,
        toolCalls: [{ id: 'c', name: 'lookup', arguments: '{"service":"payments"}' }],
      },
    ];
    const bare = requestTokens(messages, []);
    expect(bare).toBeGreaterThan(textTokens('Is payments healthy?') + textTokens('{"service":"payments"}'));
    expect(
      requestTokens(messages, [{ name: 'lookup', description: 'Look up a service', parameters: {} }]),
    ).toBeGreaterThan(bare);
  });
});
