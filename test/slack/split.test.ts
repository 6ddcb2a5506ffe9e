import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitMarkdown } from '../../src/slack/split.js';

/** True when every fence opened in `text` is closed again. */
function fencesBalanced(text: string): boolean {
  let open: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (!m) continue;
    const marker = m[1] ?? '';
    if (open === null) open = marker;
    else if (marker[0] === open[0] && marker.length >= open.length && (m[2] ?? '').trim() === '') open = null;
  }
  return open === null;
}

/** Text without whitespace and fence lines, to compare content across a split. */
function content(text: string): string {
  return text
    .split('\n')
    .filter((l) => !/^ {0,3}(`{3,}|~{3,})/.test(l))
    .join('')
    .replace(/\s+/g, '');
}

describe('splitMarkdown', () => {
  it('returns short text unchanged', () => {
    expect(splitMarkdown('hello\n\nworld')).toEqual(['hello\n\nworld']);
  });

  it('splits past 12,000 characters at paragraph boundaries', () => {
    const paragraph = `${'word '.repeat(199)}end.`; // ~1,000 chars
    const text = Array.from({ length: 30 }, (_, i) => `${i}: ${paragraph}`).join('\n\n');
    const pieces = splitMarkdown(text);
    expect(pieces.length).toBe(3);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(12_000);
      expect(piece.endsWith('end.')).toBe(true);
      expect(/^\d+: word/.test(piece)).toBe(true);
    }
    expect(content(pieces.join('\n'))).toBe(content(text));
  });

  it('closes a code fence at the cut and reopens it with its language in the next piece', () => {
    const code = Array.from({ length: 600 }, (_, i) => `const line${i} = ${i}; // some code here`).join('\n');
    const text = `Intro paragraph.\n\n\`\`\`ts\n${code}\n\`\`\`\n\nOutro.`;
    const pieces = splitMarkdown(text, 12_000);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(12_000);
      expect(fencesBalanced(piece)).toBe(true);
    }
    expect(pieces[1]?.startsWith('```ts\n')).toBe(true);
    expect(content(pieces.join('\n'))).toBe(content(text));
  });

  it('breaks a single line longer than the limit', () => {
    const pieces = splitMarkdown('a'.repeat(30_000), 12_000);
    expect(pieces.every((p) => p.length <= 12_000)).toBe(true);
    expect(pieces.join('')).toBe('a'.repeat(30_000));
  });

  it('keeps every piece within max, fences balanced and no content lost (property)', () => {
    const line = fc.oneof(
      fc.constantFrom('', '```', '```py', '~~~', 'para', '# Head', '- item'),
      fc.string({ maxLength: 120 }).map((s) => s.replace(/\n/g, ' ')),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 200 }), fc.integer({ min: 220, max: 800 }), (lines, max) => {
        const balanced = [...lines];
        if (!fencesBalanced(balanced.join('\n'))) balanced.push('```', '~~~');
        const text = balanced.join('\n');
        if (!fencesBalanced(text)) return; // a rare mix of markers; the input itself is unbalanced
        const pieces = splitMarkdown(text, max);
        for (const piece of pieces) {
          expect(piece.length).toBeLessThanOrEqual(max);
          expect(fencesBalanced(piece)).toBe(true);
        }
        expect(content(pieces.join('\n'))).toBe(content(text));
      }),
      { numRuns: 300 },
    );
  });

  it('cuts only on code-point boundaries: no piece begins or ends with half of a surrogate pair (property)', () => {
    const unit = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('😀', '𝄞', '👩‍👩‍👧', '🇫🇷', 'a', 'é') },
      { weight: 1, arbitrary: fc.constantFrom(' ', '\n', '\n\n') },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 5 }).map((g) => g.replace(/`/g, '')) },
    );
    const wellFormed = (s: string) =>
      !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
    fc.assert(
      fc.property(
        fc.array(unit, { minLength: 100, maxLength: 1_500 }),
        fc.integer({ min: 220, max: 700 }),
        (units, max) => {
          const text = units.join('');
          const pieces = splitMarkdown(text, max);
          for (const piece of pieces) {
            expect(piece.length).toBeLessThanOrEqual(max);
            expect(wellFormed(piece)).toBe(true);
          }
          expect(content(pieces.join('\n'))).toBe(content(text));
        },
      ),
      { numRuns: 300 },
    );
  });
});
