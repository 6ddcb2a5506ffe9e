/**
 * The pictures' line breaking: no drawn line is wider than the room it was given, and no character is
 * lost or reordered (only the spaces at a break are dropped).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Run, RunStyle } from '../../scripts/pictures/mrkdwn-runs.js';
import { runWidth, wrap } from '../../scripts/pictures/svg.js';

const styles: RunStyle[] = ['plain', 'bold', 'italic', 'code', 'mention', 'link'];
const run = fc.record({
  text: fc.string({ unit: fc.constantFrom('a', 'W', ' ', 'é', '✋', '-', '1'), maxLength: 60 }),
  style: fc.constantFrom(...styles),
});

const squeeze = (text: string) => text.replace(/ +/g, '');

describe('wrap', () => {
  it('keeps every line within its width and every non-space character in order', () => {
    fc.assert(
      fc.property(fc.array(run, { maxLength: 8 }), fc.integer({ min: 40, max: 600 }), (runs: Run[], max) => {
        const lines = wrap(runs, max, 15);
        for (const line of lines) {
          expect(line.reduce((w, r) => w + runWidth(r.text, r.style, 15), 0)).toBeLessThanOrEqual(max);
        }
        const drawn = lines
          .flat()
          .map((r) => r.text)
          .join('');
        expect(squeeze(drawn)).toBe(squeeze(runs.map((r) => r.text).join('')));
      }),
      { numRuns: 300 },
    );
  });
});
