/**
 * The server's JSON Schema decides which arguments reach the server: compiled once with ajv, checked by
 * the engine before any gating (a bad argument is an `invalid_arguments` result), sent to the model as is.
 */
import * as Ajv from 'ajv';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { prepareCall } from '../../src/loop/prepare.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { toolSchema } from '../../src/loop/tool-schemas.js';
import { compileInputSchema } from '../../src/mcp/input-schema.js';
import { newRun } from '../support/engine.js';

const addFormats = ((addFormatsModule as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv.Ajv,
) => void;

const schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: {
    path: { type: 'string', minLength: 1 },
    mode: { enum: ['a', 'b'] },
    count: { type: 'integer', minimum: 0 },
    when: { type: 'string', format: 'date-time' },
  },
  required: ['path'],
  additionalProperties: false,
};

const compiled = compileInputSchema(schema);
if (!compiled.ok) throw new Error(compiled.reason);
const tool: AnyTool = {
  name: 'srv__t',
  description: 'd',
  parameters: compiled.parameters,
  effect: 'write',
  execute: async () => 'ran',
};
const prepare = (args: unknown) =>
  prepareCall(
    { id: 'c1', name: 'srv__t', arguments: JSON.stringify(args) },
    new Map([[tool.name, tool]]),
    newRun(),
  );

describe('compileInputSchema', () => {
  it('the model is sent the server’s schema unchanged', () => {
    const { $schema: _s, ...rest } = schema;
    expect(toolSchema(tool).parameters).toEqual(rest);
  });

  it('a bad argument is invalid_arguments naming the key; a good one becomes a gated call', () => {
    expect(prepare({ path: '', extra: 1, count: -1 })).toMatchObject({
      kind: 'error',
      result: {
        ok: false,
        error: {
          code: 'invalid_arguments',
          message:
            'The arguments of srv__t do not match its schema: extra: is not a known property; path: must NOT have fewer than 1 characters; count: must be >= 0.',
        },
      },
    });
    expect(prepare({ when: 'yesterday', path: 'x' })).toMatchObject({
      kind: 'error',
      result: { error: { message: expect.stringContaining('when: must match format "date-time"') } },
    });
    expect(prepare({ path: 'x', mode: 'a' })).toMatchObject({
      kind: 'gated',
      args: { path: 'x', mode: 'a' },
    });
  });

  it('property: a call becomes gated exactly when ajv accepts its arguments', () => {
    const reference = new Ajv.Ajv({ strict: false, allErrors: true });
    addFormats(reference);
    const check = reference.compile(schema);
    fc.assert(
      fc.property(
        fc.record(
          {
            path: fc.oneof(fc.string(), fc.integer()),
            mode: fc.constantFrom('a', 'b', 'c'),
            // Finite: arguments come from the model as JSON, which has no Infinity or NaN.
            count: fc.oneof(
              fc.integer({ min: -3, max: 3 }),
              fc.double({ noDefaultInfinity: true, noNaN: true }),
            ),
            extra: fc.string(),
          },
          { requiredKeys: [] },
        ),
        (args) => {
          expect(prepare(args).kind === 'gated').toBe(check(args));
        },
      ),
    );
  });

  it('refuses a schema that is not JSON Schema, and one that is not an object', () => {
    expect(compileInputSchema({ type: 'object', properties: { x: { type: 'strang' } } })).toEqual({
      ok: false,
      reason: expect.stringContaining('its input schema is not valid JSON Schema'),
    });
    expect(compileInputSchema({ type: 'string' })).toEqual({
      ok: false,
      reason: 'its input schema does not describe an object (type: object)',
    });
  });

  it('reads draft 2020-12 schemas too ($defs, prefixItems)', () => {
    const c = compileInputSchema({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false } },
      properties: { p: { $ref: '#/$defs/pair' } },
    });
    if (!c.ok) throw new Error(c.reason);
    expect(c.parameters.safeParse({ p: ['a', 1] }).success).toBe(true);
    expect(c.parameters.safeParse({ p: ['a', 1, 2] }).success).toBe(false);
    expect(z.toJSONSchema(c.parameters)).toMatchObject({ properties: { p: { $ref: '#/$defs/pair' } } });
  });
});
