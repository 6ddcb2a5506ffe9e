import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitAnswer } from '../../src/loop/answer.js';

/** No unpaired surrogate anywhere in `text`. */
const wellFormed = (text: string) =>
  !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

describe('splitAnswer', () => {
  it('cuts a line of emoji between characters, never inside one', () => {
    const parts = splitAnswer('😀'.repeat(5_000), 221);
    expect(parts.every(wellFormed)).toBe(true);
    expect(parts.join('')).toBe('😀'.repeat(5_000));
  });

  it('keeps every part well-formed UTF-16 and within the limit, losing nothing but the newlines it cuts at (property)', () => {
    const unit = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('😀', '𝄞', '👩‍👩‍👧', '🇫🇷', 'a', 'é') },
      { weight: 1, arbitrary: fc.constantFrom(' ', '\n', '\n\n') },
    );
    fc.assert(
      fc.property(
        fc.array(unit, { minLength: 100, maxLength: 1_500 }),
        fc.integer({ min: 100, max: 700 }),
        (units, limit) => {
          const text = units.join('');
          const parts = splitAnswer(text, limit);
          for (const part of parts) {
            expect(part.length).toBeLessThanOrEqual(limit);
            expect(wellFormed(part)).toBe(true);
          }
          expect(parts.join('').replace(/\n/g, '')).toBe(text.replace(/\n/g, ''));
        },
      ),
      { numRuns: 300 },
    );
  });
});
