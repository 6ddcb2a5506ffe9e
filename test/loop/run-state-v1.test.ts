import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { applyDecisions } from '../../src/loop/decisions.js';
import type { RunState } from '../../src/loop/run-state.js';
import { messageSchema, runHeaderStateSchema } from '../../src/store/runs/run-state-schema.js';
import { deps, scriptedModel } from '../support/engine.js';

/**
 * A run paused by version 1 of the format, frozen as JSON. When the format changes, this file stays:
 * the new code must either read it or refuse it with a migration, never misread it.
 */
const frozen = JSON.parse(
  readFileSync(new URL('../fixtures/run-state-v1.json', import.meta.url), 'utf8'),
) as RunState;

describe('run state format v1', () => {
  it('is still accepted by the store schema', () => {
    const { messages, evidence: _evidence, ...header } = frozen;
    expect(() => runHeaderStateSchema.parse(header)).not.toThrow();
    for (const m of messages) expect(() => messageSchema.parse(m)).not.toThrow();
  });

  it('can still be resumed by the engine', async () => {
    const pending = frozen.turn!.pending[0]!;
    const { deps: d, executed } = deps(scriptedModel([{ text: 'Restarted payments.' }]));
    const out = await applyDecisions(
      structuredClone(frozen),
      [{ toolCallId: pending.toolCallId, kind: 'approved', argsHash: pending.argsHash, by: 'UMGR' }],
      d,
    );
    expect(out.type).toBe('run_again');
    expect(executed).toEqual([
      { tool: 'restart', args: { service: 'payments' }, key: `run1:${pending.toolCallId}` },
    ]);
  });
});
