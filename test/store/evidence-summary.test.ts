import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundResult, renderResult, summarise } from '../../src/loop/observation.js';
import { summaryFromContent } from '../../src/store/runs/evidence-summary.js';

/** Strings rich in what the derivation must get right: whitespace of every kind, JSON structure, escapes. */
const tricky = fc
  .array(
    fc.constantFrom(
      ...[' ', '   ', '\n', '\t', '\r\n', '\u00a0', '\u2028', '\u3000', '\ufeff', '\u000b', 'x', 'é'],
      ...['"', '\\', '{', '}', '[', ']', ',', ':', '😀', '\ud800', 'a'],
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));
const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), tricky);
const { value: data } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value')),
    fc.dictionary(text, tie('value')),
  ),
}));

describe('summaryFromContent', () => {
  it('gives what summarise gives for any successful result, bounded or not', () => {
    fc.assert(
      fc.property(data, fc.integer({ min: 20, max: 3000 }), (value, maxChars) => {
        const result = boundResult(value, maxChars);
        const content = renderResult(result);
        const summary = summarise(result);
        expect(summaryFromContent(content)).toBe(summary);
        // Checked against a summary, it gives that summary back, and never one it is not.
        expect(summaryFromContent(content, summary)).toBe(summary);
        for (const other of [`${summary}x`, summary.slice(1), `x${summary.slice(1)}`, '']) {
          if (other !== summary) expect(summaryFromContent(content, other)).not.toBe(other);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('reads results that carry a verification after their data', () => {
    const result = {
      ok: true as const,
      data: { restarted: 'payments' },
      verification: { ok: true, summary: 'up' },
    };
    expect(summaryFromContent(renderResult(result))).toBe('{ "restarted": "payments" }');
  });

  it('cuts long text to 299 characters and an ellipsis', () => {
    const long = `${'word '.repeat(100)}end`;
    const summary = summaryFromContent(renderResult({ ok: true, data: long }));
    expect(summary).toHaveLength(300);
    expect(summary?.endsWith('…')).toBe(true);
    expect(summary).toBe(summarise({ ok: true, data: long }));
  });

  it('refuses what is not a successful result, and malformed text', () => {
    expect(
      summaryFromContent(renderResult({ ok: false, error: { code: 'timeout', message: 'slow' } })),
    ).toBeNull();
    expect(summaryFromContent('plain text')).toBeNull();
    expect(summaryFromContent('{"ok":true,"data":"never closed')).toBeNull();
    expect(summaryFromContent('{"ok":true,"data":"bad \\q escape"}')).toBeNull();
    expect(summaryFromContent('{"ok":true,"data":{"open":1')).toBeNull();
  });
});
