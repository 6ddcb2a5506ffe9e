import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger, secretRedactor } from '../../src/log/logger.js';
import { defineTool } from '../../src/loop/define-tool.js';
import type { Message } from '../../src/loop/messages.js';
import { runUntilPause } from '../../src/loop/run.js';
import { withRedactedFailures } from '../../src/tools/redacted-failures.js';
import { call, deps, newRun, scriptedModel } from '../support/engine.js';
import { toolContext } from './tool-harness.js';

const SECRET = 'xoxb-111-222-abcdefghijkl';
const secrets = secretRedactor([SECRET, 'short']);

/** A tool whose upstream echoes the token into its errors, as a misbehaving server might. */
const leaky = defineTool({
  name: 'leaky',
  description: 'Fails with the token in its message',
  effect: 'write',
  parameters: z.object({}),
  async execute() {
    throw new Error(`401 from upstream: bad token ${SECRET}`);
  },
  async preview() {
    throw new Error(`cannot preview with ${SECRET}`);
  },
  async verify() {
    return { ok: false, summary: `still refused ${SECRET}` };
  },
});

function memoryLogger() {
  let text = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination, secrets }), raw: () => text };
}

describe('tool failures with a configured secret value', () => {
  it('reach the model and the log with the value replaced by [redacted]', async () => {
    const read = { ...leaky, effect: 'read' as const };
    const { logger, raw } = memoryLogger();
    const model = scriptedModel([{ calls: [call('leaky')] }, { text: 'could not' }]);
    const { deps: d } = deps(model, {
      tools: withRedactedFailures(new Map([['leaky', read]]), secrets.text),
      logger,
    });
    const out = await runUntilPause(newRun(), d);
    const result = out.state.messages.find((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool');
    expect(JSON.parse(result?.content ?? '')).toEqual({
      ok: false,
      error: { code: 'tool_failed', message: 'leaky failed: 401 from upstream: bad token [redacted]' },
    });
    const failed = raw()
      .split('\n')
      .filter((line) => line.includes('tool call failed'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain('bad token [redacted]');
    expect(raw()).not.toContain(SECRET);
  });

  it('also in errors whose message is a getter or that are frozen', async () => {
    const throwing = (err: unknown) =>
      withRedactedFailures(
        new Map([['t', { ...leaky, execute: () => Promise.reject(err) }]]),
        secrets.text,
      ).get('t');
    const dom = new DOMException(`aborted with ${SECRET}`, 'AbortError');
    await expect(throwing(dom)?.execute({}, toolContext())).rejects.toMatchObject({
      name: 'AbortError',
      message: 'aborted with [redacted]',
    });
    const frozen = Object.freeze(new Error(`frozen ${SECRET}`));
    await expect(throwing(frozen)?.execute({}, toolContext())).rejects.toThrow('frozen [redacted]');
  });

  it('also in preview errors and verification summaries', async () => {
    const tool = withRedactedFailures(new Map([['leaky', leaky]]), secrets.text).get('leaky');
    await expect(tool?.preview?.({}, toolContext())).rejects.toThrow('cannot preview with [redacted]');
    await expect(tool?.verify?.({}, undefined, toolContext())).resolves.toEqual({
      ok: false,
      summary: 'still refused [redacted]',
    });
  });
});
