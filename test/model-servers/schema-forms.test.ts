import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolSchema } from '../../src/loop/model-port.js';
import {
  formTool,
  fromStrictArguments,
  isSchemaRefusal,
  lenientParameters,
  strictParameters,
} from '../../src/loop/schema-forms.js';
import { toolSchema } from '../../src/loop/tool-schemas.js';
import { createPageOncall, pageOncallSettings } from '../../src/tools/page-oncall.js';

const pageOncall = toolSchema(
  createPageOncall(pageOncallSettings.parse({ routingKeyEnv: 'PD_KEY' }), { env: { PD_KEY: 'k' } }),
);

function keywords(schema: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const s of schema) keywords(s, found);
  else if (typeof schema === 'object' && schema !== null) {
    for (const [k, v] of Object.entries(schema)) {
      found.add(k);
      if (k !== 'enum' && k !== 'required') keywords(v, found);
    }
  }
  return found;
}

describe('schema forms', () => {
  it('standard is the schema zod makes, unchanged', () => {
    expect(formTool(pageOncall, 'standard').parameters).toBe(pageOncall.parameters);
    expect(formTool(pageOncall, 'standard').strict).toBeUndefined();
  });

  it('lenient drops length, pattern and format limits and keeps enums, required and descriptions', () => {
    const standard = JSON.stringify(pageOncall.parameters);
    expect(standard).toContain('"maxLength":2000');
    const lenient = formTool(pageOncall, 'lenient').parameters;
    const found = keywords(lenient);
    for (const k of ['maxLength', 'minLength', 'pattern', 'format']) expect(found.has(k)).toBe(false);
    expect(lenient.required).toEqual(['summary', 'severity']);
    expect(JSON.stringify(lenient)).toContain('"enum":["critical","error","warning","info"]');
    expect(JSON.stringify(lenient)).toContain('One line: what is wrong and where');
  });

  it('the same schema and form give the same object (byte-identical tool lists)', () => {
    expect(formTool(pageOncall, 'lenient')).toBe(formTool(pageOncall, 'lenient'));
    expect(formTool(pageOncall, 'strict')).toBe(formTool(pageOncall, 'strict'));
  });

  it('strict requires every property, makes optional ones nullable and closes objects', () => {
    const tool: ToolSchema = toolSchema({
      name: 'lookup',
      description: 'Look up',
      effect: 'read',
      parameters: z.object({
        service: z.string().max(40),
        env: z.enum(['staging', 'prod']).optional(),
        limit: z.number().int().default(10),
        filter: z.object({ since: z.string().optional() }).optional(),
      }),
      execute: async () => 'ok',
    });
    const strict = formTool(tool, 'strict');
    expect(strict.strict).toBe(true);
    const p = strict.parameters as {
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, Record<string, unknown>>;
    };
    expect(p.required).toEqual(['service', 'env', 'limit', 'filter']);
    expect(p.additionalProperties).toBe(false);
    expect(p.properties.service).toEqual({ type: 'string' });
    expect(p.properties.limit).toEqual({ type: ['integer', 'null'] });
    expect(p.properties.env).toEqual({
      anyOf: [{ type: 'string', enum: ['staging', 'prod'] }, { type: 'null' }],
    });
    const filter = p.properties.filter!;
    expect(filter.type).toEqual(['object', 'null']);
    expect(filter.required).toEqual(['since']);
    expect(filter.additionalProperties).toBe(false);
  });

  it('strict leaves a schema with free keys (a record) without strict, in the lenient form', () => {
    expect(strictParameters(pageOncall.parameters)).toBeNull();
    const formed = formTool(pageOncall, 'strict');
    expect(formed.strict).toBeUndefined();
    expect(formed.parameters).toEqual(lenientParameters(pageOncall.parameters));
  });

  it('a null sent for an optional property in strict mode is read back as absent; other values stay', () => {
    const original = {
      type: 'object',
      properties: {
        a: { type: 'string' },
        b: { type: 'string' },
        c: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        nested: { type: 'array', items: { type: 'object', properties: { x: { type: 'number' } } } },
      },
      required: ['a'],
    };
    expect(
      JSON.parse(fromStrictArguments(original, '{"a":null,"b":null,"c":null,"nested":[{"x":null}]}')),
    ).toEqual({ a: null, c: null, nested: [{}] });
    expect(fromStrictArguments(original, '{"a":"x","b":"y"}')).toBe('{"a":"x","b":"y"}');
    expect(fromStrictArguments(original, 'not json')).toBe('not json');
  });

  it('property: every form of any flat object schema keeps its property names and never adds a limit', () => {
    const prop = fc.record(
      {
        type: fc.constantFrom('string', 'number', 'integer', 'boolean'),
        maxLength: fc.integer({ min: 1, max: 5000 }),
        description: fc.string(),
      },
      { requiredKeys: ['type'] },
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), prop, { minKeys: 1 }),
        fc.boolean(),
        (props, allRequired) => {
          const parameters = {
            type: 'object',
            properties: props,
            required: allRequired ? Object.keys(props) : [],
          };
          const tool: ToolSchema = { name: 't', description: 'd', parameters };
          for (const form of ['standard', 'strict', 'lenient'] as const) {
            const formed = formTool(tool, form).parameters as { properties: object };
            expect(Object.keys(formed.properties).sort()).toEqual(Object.keys(props).sort());
          }
          expect(keywords(formTool(tool, 'lenient').parameters).has('maxLength')).toBe(false);
          expect(keywords(formTool(tool, 'strict').parameters).has('maxLength')).toBe(false);
        },
      ),
    );
  });

  it('names a 400 about the grammar, schema or tools as a schema refusal, and nothing else', () => {
    expect(isSchemaRefusal(400, 'Failed to initialize samplers: failed to parse grammar')).toBe(true);
    expect(
      isSchemaRefusal(
        400,
        "Invalid schema for function 'page_oncall': In context=()",
        'invalid_function_parameters',
      ),
    ).toBe(true);
    expect(isSchemaRefusal(400, 'Invalid value for tools[0].function.parameters')).toBe(true);
    expect(isSchemaRefusal(400, "This model's maximum context length is 8192 tokens")).toBe(false);
    expect(isSchemaRefusal(401, 'Incorrect API key provided for tools')).toBe(false);
    expect(isSchemaRefusal(500, 'grammar')).toBe(false);
    expect(isSchemaRefusal(400, 'Invalid value for temperature')).toBe(false);
  });
});
