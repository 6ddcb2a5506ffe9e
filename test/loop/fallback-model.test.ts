import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/loop/errors.js';
import { fallbackModel } from '../../src/loop/fallback-model.js';
import type { ModelPort, ModelReply } from '../../src/loop/model-port.js';

function port(name: string, outcome: () => ModelReply | Error): ModelPort & { calls: number } {
  const p = {
    model: name,
    calls: 0,
    async complete() {
      p.calls++;
      const out = outcome();
      if (out instanceof Error) throw out;
      return out;
    },
  };
  return p;
}

const reply = (model: string): ModelReply => ({ content: `from ${model}`, toolCalls: [], model });
const ask = (signal = new AbortController().signal) => ({ messages: [], tools: [], signal });
const down = (status = 500) =>
  new ModelError(`answered HTTP ${status}`, { status, retryable: status >= 500 || status === 429 });

describe('fallbackModel', () => {
  it('asks the next model when the primary keeps failing, and says which model answered', async () => {
    const primary = port('gpt-a', () => down());
    const backup = port('gpt-b', () => reply('gpt-b'));
    const seen: string[] = [];
    const model = fallbackModel(
      [
        { name: 'gpt-a', port: primary },
        { name: 'gpt-b', port: backup },
      ],
      { onFallback: (failed, next) => seen.push(`${failed}->${next}`) },
    );
    expect(model.model).toBe('gpt-a');
    expect(await model.complete(ask())).toMatchObject({ model: 'gpt-b', content: 'from gpt-b' });
    expect([primary.calls, backup.calls]).toEqual([1, 1]);
    expect(seen).toEqual(['gpt-a->gpt-b']);
  });

  it('uses only the primary while it answers', async () => {
    const primary = port('a', () => reply('a'));
    const backup = port('b', () => reply('b'));
    const model = fallbackModel([
      { name: 'a', port: primary },
      { name: 'b', port: backup },
    ]);
    expect((await model.complete(ask())).model).toBe('a');
    expect(backup.calls).toBe(0);
  });

  it('does not fall back for a request the server refuses as wrong (400), nor after an abort', async () => {
    const backup = port('b', () => reply('b'));
    const bad = fallbackModel([
      { name: 'a', port: port('a', () => down(400)) },
      { name: 'b', port: backup },
    ]);
    await expect(bad.complete(ask())).rejects.toMatchObject({ status: 400 });
    const aborted = new AbortController();
    aborted.abort(new Error('deadline'));
    const cut = fallbackModel([
      { name: 'a', port: port('a', () => new ModelError('aborted', { retryable: false })) },
      { name: 'b', port: backup },
    ]);
    await expect(cut.complete(ask(aborted.signal))).rejects.toThrow('aborted');
    expect(backup.calls).toBe(0);
  });

  it('when every model fails, the error names each failure in order', async () => {
    const model = fallbackModel([
      { name: 'a', port: port('a', () => down(503)) },
      { name: 'b', port: port('b', () => new Error('socket hang up')) },
      { name: 'c', port: port('c', () => down(502)) },
    ]);
    const err = await model.complete(ask()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as Error).message).toBe(
      'a: answered HTTP 503; then b: socket hang up; then c: answered HTTP 502',
    );
  });
});
