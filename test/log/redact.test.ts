import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED, redactJsonLine, secretRedactor } from '../../src/log/redact.js';

/** The rule, restated on parsed values: keys ending with these words, in any case, are secret. */
const SECRET_SUFFIX = /(?:token|secret|password|api[-_]?key|authorization|cookie|routing[-_]?key)$/i;

/** What the line should become, computed on the object instead of the text. */
function reference(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reference);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      Object.defineProperty(out, key, {
        value: SECRET_SUFFIX.test(key) ? REDACTED : reference(inner),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

const secretNames = [
  'token',
  'SLACK_BOT_TOKEN',
  'Authorization',
  'set-cookie',
  'apiKey',
  'x-api-key',
  'routing_key',
];
const lookalikes = [
  'maxTokens',
  'tokens',
  'tokenCount',
  'idempotencyKey',
  'key',
  'secretive',
  'cookies',
  'auth',
];
/** Keys mix secret names, near misses and arbitrary text (quotes, backslashes, control characters). */
const key = fc.oneof(
  fc.constantFrom(...secretNames, ...lookalikes),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.string({ maxLength: 8 }).map((s) => `${s}token`),
);
const leaf = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('a,"token":"x"', '{"apiKey":1}', '\\', '\\"', ',"'),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
const { object: jsonObject } = fc.letrec<{ value: unknown; object: Record<string, unknown> }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('value'), { maxLength: 4 }), tie('object')),
  object: fc.dictionary(key, tie('value'), { maxKeys: 5 }),
}));

describe('redactJsonLine', () => {
  it('censors exactly the values of secret keys, at any depth, and keeps valid JSON', () => {
    fc.assert(
      fc.property(jsonObject, (value) => {
        const line = JSON.stringify(value);
        const redacted = redactJsonLine(`${line}\n`);
        expect(redacted.endsWith('}\n')).toBe(true);
        expect(JSON.parse(redacted)).toEqual(JSON.parse(JSON.stringify(reference(value))));
      }),
      { numRuns: 1000 },
    );
  });

  it('returns a line without secret keys unchanged', () => {
    const line = '{"level":"info","maxTokens":5,"msg":"the \\"token\\": gone","tokens":[1,2]}\n';
    expect(redactJsonLine(line)).toBe(line);
  });

  it('replaces string, number, array and object values alike', () => {
    const line = JSON.stringify({
      a: { token: 'x', apiKey: 5, cookie: ['a', 'b'], secret: { n: [1, { m: '}' }] } },
    });
    expect(JSON.parse(redactJsonLine(line))).toEqual({
      a: { token: REDACTED, apiKey: REDACTED, cookie: REDACTED, secret: REDACTED },
    });
  });
});

describe('secretRedactor', () => {
  const redactor = secretRedactor([
    'sk-abcdefgh',
    'sk-abcdefgh-longer',
    '87654321',
    'q"uo\\te12',
    undefined,
    'short',
  ]);

  it('replaces every secret in a text, the longest first, and leaves short values alone', () => {
    expect(redactor.text('a sk-abcdefgh-longer b sk-abcdefgh c short')).toBe(
      `a ${REDACTED} b ${REDACTED} c short`,
    );
  });

  it('keeps a JSON line valid JSON wherever the secret sits: strings, keys, numbers, escaped forms', () => {
    const line = `${JSON.stringify({ n: 87654321, 'k-sk-abcdefgh': 1, s: 'x q"uo\\te12 y' })}\n`;
    const out = redactor.jsonLine(line);
    expect(out.endsWith('\n')).toBe(true);
    expect(JSON.parse(out)).toEqual({ n: REDACTED, [`k-${REDACTED}`]: 1, s: `x ${REDACTED} y` });
  });

  it('returns a line without any secret unchanged', () => {
    const line = '{"level":"info","msg":"hello","n":1}\n';
    expect(redactor.jsonLine(line)).toBe(line);
  });

  it('changes nothing when no secret is long enough', () => {
    const none = secretRedactor(['short', undefined]);
    expect(none.text('short')).toBe('short');
    expect(none.jsonLine('{"a":"short"}')).toBe('{"a":"short"}');
  });
});
