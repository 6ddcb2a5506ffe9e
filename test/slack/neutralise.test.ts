import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AnswerNeutraliser, neutraliseAnswer, TOKEN_MAX_CHARS } from '../../src/slack/neutralise.js';
import { pagesOrDisguises, splitText, tokenishText } from '../support/slack-text.js';

describe('neutraliseAnswer', () => {
  it('turns broadcasts and group mentions into words, shows link targets, keeps user mentions', () => {
    expect(
      neutraliseAnswer(
        'hey <!channel> <!here|here> <!everyone> <!subteam^S123|@sre> <!subteam^S9> <@U1> <@U2|bob> <#C1>',
      ),
    ).toBe('hey @channel @here @everyone @sre @S9 <@U1> <@U2|bob> <#C1>');
    expect(neutraliseAnswer('see <https://evil.example/x|https://status.example>')).toBe(
      'see https://status.example (https://evil.example/x)',
    );
    expect(neutraliseAnswer('<https://a.example> and <https://a.example|https://a.example>')).toBe(
      '<https://a.example> and <https://a.example>',
    );
  });

  it('defuses a `<` that opens no token, so a later `>` cannot close one', () => {
    const label = 'y'.repeat(TOKEN_MAX_CHARS);
    expect(neutraliseAnswer(`<!channel|${label}>`)).toBe(`＜!channel|${label}>`);
    expect(neutraliseAnswer('<!channel|a<b> p99 < 200ms, x<y')).toBe('＜!channel|a<b> p99 < 200ms, x＜y');
  });

  it('defuses a `<` before another `<`, which a rewritten token would otherwise leave opening a link', () => {
    // Found by the property below (seed -787019861): the inner token became text starting with the link.
    const text = '<<|https://good.example>|https://good.example>';
    expect(neutraliseAnswer(text)).toBe('＜https://good.example ()|https://good.example>');
    const n = new AnswerNeutraliser();
    expect(n.push('<') + n.push('<|https://good.example>') + n.push('|https://good.example>') + n.end()).toBe(
      neutraliseAnswer(text),
    );
  });

  it('leaves nothing that pages or disguises a link, whatever the text', () => {
    fc.assert(
      fc.property(tokenishText, (text) => {
        expect(pagesOrDisguises(neutraliseAnswer(text))).toBe(false);
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives, for any split of any text into pieces, the whole text neutralised', () => {
    fc.assert(
      fc.property(splitText, ({ text, pieces }) => {
        const n = new AnswerNeutraliser();
        const out = pieces.map((p) => n.push(p)).join('') + n.end();
        expect(out).toBe(neutraliseAnswer(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it('holds back at most one token', () => {
    const n = new AnswerNeutraliser();
    expect(n.push('Heads up <!chan')).toBe('Heads up ');
    expect(n.push('nel|')).toBe('');
    expect(n.push('z'.repeat(TOKEN_MAX_CHARS))).toBe(`＜!channel|${'z'.repeat(TOKEN_MAX_CHARS)}`);
    expect(n.push('> done')).toBe('> done');
    expect(n.end()).toBe('');
  });
});
