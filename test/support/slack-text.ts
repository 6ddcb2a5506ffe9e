/** Arbitraries and checks for text a model may send into Slack (neutralisation tests). */
import fc from 'fast-check';
import { TOKEN_MAX_CHARS } from '../../src/slack/neutralise.js';

/** Text rich in the characters and words that make Slack tokens. */
export const tokenishText = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '<',
        '>',
        '|',
        ' ',
        '\n',
        '!',
        '@',
        '#',
        '^',
        '<!channel',
        '<!here|',
        '<!everyone>',
        '<!subteam^S0SRE',
        '<@U0ALICE',
        '<#C0OPS>',
        '<https://evil.example',
        '|https://good.example>',
        '<!date^1700000000^{date}|x>',
        'x'.repeat(TOKEN_MAX_CHARS - 5),
      ),
      fc.string({ maxLength: 8 }),
    ),
    { maxLength: 20 },
  )
  .map((parts) => parts.join(''));

/** A text and the places it is cut into pieces. */
export const splitText = tokenishText.chain((text) =>
  fc.uniqueArray(fc.integer({ min: 0, max: text.length }), { maxLength: 12 }).map((cuts) => {
    const at = [0, ...cuts.sort((a, b) => a - b), text.length];
    return { text, pieces: at.slice(1).map((end, i) => text.slice(at[i], end)) };
  }),
);

/** Whether Slack could read `text` as a broadcast, a group mention or a link showing another label. */
export function pagesOrDisguises(text: string): boolean {
  return /<!(here|channel|everyone|subteam)/i.test(text) || /<[^\s<>@#!][^<>|]*\|[^<>]*>/.test(text);
}
