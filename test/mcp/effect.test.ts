/**
 * Invariant 2 for MCP tools starts here: which calls are gated. Only the policy and `readOnlyHint: true`
 * make a tool a read; every other shape of annotations (missing, false, strings, other hints) is a write.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideEffect } from '../../src/mcp/effect.js';

const anyHint = fc.oneof(fc.constant(undefined), fc.boolean(), fc.string(), fc.integer(), fc.constant(null));
const annotations = fc.option(
  fc.record(
    {
      readOnlyHint: anyHint,
      destructiveHint: anyHint,
      idempotentHint: anyHint,
      openWorldHint: anyHint,
      title: fc.string(),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
const noOverrides = { trustAnnotations: true, tools: {} };

describe('decideEffect', () => {
  it('without overrides, a tool is a read exactly when readOnlyHint is the boolean true', () => {
    fc.assert(
      fc.property(annotations, (a) => {
        const d = decideEffect('s', 't', a as never, noOverrides);
        expect(d.effect).toBe(a?.readOnlyHint === true ? 'read' : 'write');
      }),
    );
  });

  it('trustAnnotations: false makes every tool a write, whatever it declares', () => {
    fc.assert(
      fc.property(annotations, (a) => {
        const d = decideEffect('s', 't', a as never, { trustAnnotations: false, tools: {} });
        expect(d).toEqual({
          effect: 'write',
          source: 'override',
          why: 'mcp.servers.s.trustAnnotations: false',
        });
      }),
    );
  });

  it('a tool override wins over the server override, which wins over annotations', () => {
    const readOnly = { readOnlyHint: true };
    expect(decideEffect('s', 't', readOnly, { effect: 'notify', trustAnnotations: true, tools: {} })).toEqual(
      {
        effect: 'notify',
        source: 'override',
        why: 'mcp.servers.s.effect',
      },
    );
    expect(
      decideEffect('s', 't', readOnly, {
        effect: 'read',
        trustAnnotations: false,
        tools: { t: { effect: 'write' } },
      }),
    ).toEqual({ effect: 'write', source: 'override', why: 'mcp.servers.s.tools.t.effect' });
  });

  it('names the reason: annotation or the MCP default', () => {
    expect(decideEffect('s', 't', undefined, noOverrides)).toEqual({
      effect: 'write',
      source: 'default',
      why: 'no readOnlyHint (MCP default: not read-only)',
    });
    expect(decideEffect('s', 't', { readOnlyHint: false, destructiveHint: false }, noOverrides)).toEqual({
      effect: 'write',
      source: 'annotation',
      why: 'readOnlyHint: false',
    });
  });

  it('a tool named like an Object.prototype member finds no override', () => {
    expect(decideEffect('s', 'constructor', undefined, noOverrides).effect).toBe('write');
    expect(decideEffect('s', 'toString', { readOnlyHint: true }, noOverrides).effect).toBe('read');
  });
});
