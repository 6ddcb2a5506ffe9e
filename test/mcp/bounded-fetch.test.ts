/** boundedFetch: a JSON body is one message; an event stream is bounded per event, however long it runs. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedFetch } from '../../src/mcp/bounded-fetch.js';

const serve =
  (chunks: string[], type: string): typeof fetch =>
  async () =>
    new Response(
      new ReadableStream({
        start(controller) {
          for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
          controller.close();
        },
      }),
      { headers: { 'content-type': type } },
    );

const read = async (chunks: string[], type: string, max: number) => {
  const told: string[] = [];
  const response = await boundedFetch(max, (why) => told.push(why), serve(chunks, type))('http://h/');
  const text = await response.text().then(
    (t) => t,
    (err: Error) => `error: ${err.message}`,
  );
  return { text, told };
};

describe('boundedFetch', () => {
  it('property: an event stream is cut exactly when one event is longer than the bound', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 20 }),
        async (sizes, chunkSize) => {
          const stream = sizes.map((n) => `data: ${'x'.repeat(n)}\n\n`).join('');
          const chunks = stream.match(new RegExp(`[\\s\\S]{1,${chunkSize}}`, 'g')) ?? [];
          const { text, told } = await read(chunks, 'text/event-stream', 206);
          const cut = sizes.some((n) => n + 6 > 206);
          expect(told.length).toBe(cut ? 1 : 0);
          if (!cut) expect(text).toBe(stream);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a JSON body is one message', async () => {
    expect((await read(['{"a":', '"xxxx"}'], 'application/json', 12)).text).toBe('{"a":"xxxx"}');
    expect(await read(['{"a":', '"xxxxx"}'], 'application/json', 12)).toEqual({
      text: 'error: a reply of the server was larger than maxReplyBytes (12 bytes)',
      told: ['a reply of the server was larger than maxReplyBytes (12 bytes)'],
    });
  });
});
