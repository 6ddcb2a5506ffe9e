import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/loop/define-tool.js';
import { prepareCall } from '../../src/loop/prepare.js';
import { newRun, testTools } from '../support/engine.js';

const { tools: base } = testTools();
/** A tool accepting any JSON under `data`, so deep values reach zod and hashing. */
const anything = defineTool({
  name: 'store',
  description: 'Stores any JSON',
  effect: 'write',
  parameters: z.object({ data: z.unknown() }),
  async execute() {
    return 'stored';
  },
});
const tools = new Map([...base, ['store', anything]]);
const names = fc.constantFrom(...tools.keys(), 'nope');
const state = newRun();

/** JSON text of `inner` wrapped `depth` times in arrays or single-key objects, built without recursion. */
const deepText = fc
  .record({
    depth: fc.integer({ min: 0, max: 20_000 }),
    wrapper: fc.constantFrom<[string, string]>(['[', ']'], ['{"data":', '}'], ['{"a":[', ']}']),
    inner: fc.jsonValue({ maxDepth: 3 }),
  })
  .map(
    ({ depth, wrapper: [open, close], inner }) =>
      open.repeat(depth) + JSON.stringify(inner) + close.repeat(depth),
  );
const bracketSoup = fc
  .array(fc.constantFrom('[', ']', '{', '}', '"', '\\', ':', ',', '1', '"a":', '"data":', ' '), {
    maxLength: 3_000,
  })
  .map((parts) => parts.join(''));

describe('prepareCall', () => {
  it('never throws, whatever the arguments text', () => {
    fc.assert(
      fc.property(names, fc.oneof(fc.string(), deepText, bracketSoup, fc.json()), (name, text) => {
        const prepared = prepareCall({ id: 'c1', name, arguments: text }, tools, state);
        if (prepared.kind === 'error') expect(prepared.result.ok).toBe(false);
      }),
      { numRuns: 400 },
    );
  });

  it('accepts JSON values nested within the bound', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 30 }), (data) => {
        const prepared = prepareCall(
          { id: 'c1', name: 'store', arguments: JSON.stringify({ data }) },
          tools,
          state,
        );
        expect(prepared.kind).toBe('gated');
      }),
      { numRuns: 200 },
    );
  });
});
