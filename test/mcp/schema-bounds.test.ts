/**
 * Item 7 of issue 21: no server-supplied schema can freeze a worker. A real stdio MCP server
 * (test/mcp/servers/misbehaving-server.ts, mode `schemas`) lists hostile input schemas: `pattern`s run on
 * RE2 (linear time), patterns only a backtracking engine runs are refused at connection, and schemas too
 * deep or too large are refused before ajv compiles them. The other tools are served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareCall } from '../../src/loop/prepare.js';
import {
  compileInputSchema,
  MAX_LIST_COMPILE_MS,
  MAX_PATTERN_COMPILE_MS,
  MAX_SCHEMA_CHARS,
  MAX_SCHEMA_DEPTH,
  SchemaCompiler,
} from '../../src/mcp/input-schema.js';
import { newRun } from '../support/engine.js';
import { misbehaving, type Started, startSource } from './support.js';

let started: Started;
beforeAll(async () => {
  started = await startSource({ bad: { command: misbehaving('schemas') } });
}, 30_000);
afterAll(async () => {
  await started?.source.close();
});

const refusal = (tool: string) => started.source.rows().find((r) => r.tool === tool)?.refused;

/** Runs the engine's argument check (ajv, before any gating) and how long it took. */
const check = (name: string, args: unknown) => {
  const began = performance.now();
  const prepared = prepareCall(
    { id: 'c1', name, arguments: JSON.stringify(args) },
    started.source.tools(),
    newRun(),
  );
  return { prepared, ms: performance.now() - began };
};

describe('server-supplied input schemas cannot freeze a worker', { timeout: 30_000 }, () => {
  it('a pattern that backtracks exponentially in JavaScript checks a 32-character argument at once', () => {
    // In JavaScript's engine this pattern takes seconds here, doubling with each character.
    const slow = `${'a1'.repeat(16)}!`;
    const { prepared, ms } = check('bad__slug', { slug: slow });
    expect(prepared).toMatchObject({ kind: 'error', result: { error: { code: 'invalid_arguments' } } });
    expect(ms).toBeLessThan(500);
    expect(check('bad__slug', { slug: 'abc-def-42' }).prepared.kind).not.toBe('error');
  });

  it('the same pattern as a patternProperties key: a 32-character key is checked at once', () => {
    const { prepared, ms } = check('bad__keyed', { [`${'b2'.repeat(16)}!`]: 'v' });
    expect(prepared).toMatchObject({ kind: 'error', result: { error: { code: 'invalid_arguments' } } });
    expect(ms).toBeLessThan(500);
    expect(check('bad__keyed', { 'ok-key': 'v' }).prepared.kind).not.toBe('error');
  });

  it('patterns RE2 cannot run (backreference, lookahead) are refused at connection, naming why', () => {
    expect(refusal('backref')).toMatch(
      /^its input schema is not valid JSON Schema: the pattern "\^\(a\+\)\\\\1\$" is not supported by the linear-time engine/,
    );
    expect(refusal('lookahead')).toMatch(
      /not supported by the linear-time engine \(RE2: no lookaround or backreferences\)/,
    );
    expect(started.source.tools().has('bad__backref')).toBe(false);
  });

  it('a schema nested too deep or too large is refused; the other tools are served', () => {
    expect(refusal('deep')).toBe(`its input schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
    expect(refusal('big')).toMatch(
      new RegExp(`^its input schema is \\d+ characters of JSON, more than ${MAX_SCHEMA_CHARS}$`),
    );
    expect([...started.source.tools().keys()].sort()).toEqual(['bad__echo', 'bad__keyed', 'bad__slug']);
  });

  it('a schema nested 100,000 levels is refused without overflowing the stack', () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 100_000; i++) schema = { type: 'object', properties: { x: schema } };
    expect(compileInputSchema(schema)).toEqual({
      ok: false,
      reason: `its input schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`,
    });
  });
});

describe('compiling patterns is bounded in time', () => {
  // RE2 compiles `a{1000}` in about 5 ms; 64 KiB of schema holds thousands of such patterns.
  const heavy = (salt: string, n = 400) => ({
    type: 'object',
    properties: Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string', pattern: `^a{1000}${salt}${i}$` }]),
    ),
  });

  it('a schema whose patterns take too long to compile is refused, and compiling stops there', () => {
    const began = performance.now();
    const compiled = compileInputSchema(heavy('x'));
    expect(performance.now() - began).toBeLessThan(MAX_PATTERN_COMPILE_MS * 5);
    expect(compiled).toMatchObject({
      ok: false,
      reason: expect.stringContaining(`its patterns take more than ${MAX_PATTERN_COMPILE_MS} ms to compile`),
    });
  });

  it('one listing’s new schemas share a budget; the rest are refused for now and compiled at a later listing', () => {
    const compiler = new SchemaCompiler();
    // As many schemas as it takes to spend one listing's budget on this machine, then 20 more.
    const schemas: ReturnType<typeof heavy>[] = [];
    compiler.startList();
    const began = performance.now();
    let firstWaiting = -1;
    for (let i = 0; i < 20_000 && firstWaiting < 0; i++) {
      schemas.push(heavy(`s${i}-`, 6));
      const c = compiler.compile(schemas[i] as ReturnType<typeof heavy>);
      if (!c.ok && c.reason.includes('tried again at the next listing')) firstWaiting = i;
    }
    expect(firstWaiting).toBeGreaterThan(0);
    expect(performance.now() - began).toBeLessThan(MAX_LIST_COMPILE_MS * 3);
    const more = Array.from({ length: 20 }, (_, i) => heavy(`t${i}-`, 6));
    schemas.push(...more);
    const after = performance.now();
    expect(more.map((s) => compiler.compile(s).ok)).toEqual(more.map(() => false));
    // Refused without compiling: the budget is spent for this listing.
    expect(performance.now() - after).toBeLessThan(MAX_LIST_COMPILE_MS);
    // About 5 listings on a quiet machine; a loaded one spends its budget sooner (and may time a schema
    // out, to be tried again): bounded, but with room.
    for (let round = 0; round < 300 && schemas.some((s) => !compiler.compile(s).ok); round++) {
      compiler.startList();
    }
    expect(schemas.every((s) => compiler.compile(s).ok)).toBe(true);
  });
});
