/**
 * Item 8 of issue 21: input schemas are compiled once per definition. A real stdio MCP server with 31
 * tools (test/mcp/servers/misbehaving-server.ts, mode `many`) has its unchanged list fetched again and
 * again, as `tools/list_changed` makes a worker do: the compiled schemas and what ajv holds stay flat,
 * and so does the heap (each refresh used to compile every schema again, and ajv kept every copy).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchemaCompiler } from '../../src/mcp/input-schema.js';
import { misbehaving, type Started, startSource } from './support.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

let started: Started;
beforeAll(async () => {
  started = await startSource({ many: { command: misbehaving('many') } });
}, 30_000);
afterAll(async () => {
  await started?.source.close();
});

describe('input schemas are compiled once per definition', { timeout: 120_000 }, () => {
  it('1,000 refreshes of an unchanged list keep the compiled schemas and ajv’s cache flat', async () => {
    const { source } = started;
    expect(source.tools().size).toBe(31);
    const first = source.schemaStats('many');
    expect(first.compiled).toBe(31);
    const tools = source.tools();
    for (let i = 0; i < 1_000; i++) await source.refresh();
    expect(source.schemaStats('many')).toEqual(first);
    // The same definitions give the same compiled parameters (nothing compiled again).
    expect(source.tools().get('many__t07')?.parameters).toBe(tools.get('many__t07')?.parameters);
  });

  it('the heap is flat over 150 refreshes (it grew by about 24 MiB before)', async () => {
    const { source } = started;
    for (let i = 0; i < 20; i++) await source.refresh();
    const before = heapAfterGc();
    for (let i = 0; i < 150; i++) await source.refresh();
    const grown = heapAfterGc() - before;
    expect(grown).toBeLessThan(8 * 1024 * 1024);
  });
});

describe('SchemaCompiler', () => {
  it('a definition that changes frees the old schema, in the compiler and in ajv', () => {
    const compiler = new SchemaCompiler();
    const schema = (i: number) => ({
      type: 'object',
      properties: { id: { type: 'string', pattern: `^x{${i % 50}}$`, maxLength: i } },
    });
    const held: number[] = [];
    for (let i = 0; i < 200; i++) {
      const compiled = compiler.compile(schema(i));
      expect(compiled.ok).toBe(true);
      compiler.retain(new Set([compiled.key ?? '']));
      held.push(compiler.stats().heldByAjv);
    }
    expect(compiler.stats().compiled).toBe(1);
    expect(new Set(held).size).toBe(1);
    // Equal schemas (a fresh copy, keys in another order) share one compilation.
    const a = compiler.compile({ properties: { id: { maxLength: 3, type: 'string' } }, type: 'object' });
    const b = compiler.compile({ type: 'object', properties: { id: { type: 'string', maxLength: 3 } } });
    expect(a.ok && b.ok && a.parameters === b.parameters).toBe(true);
  });

  it('a redefined schema that keeps its $id compiles once the old one is let go', () => {
    const compiler = new SchemaCompiler();
    const v1 = { $id: 'https://srv/t', type: 'object', properties: { a: { type: 'string' } } };
    const v2 = { $id: 'https://srv/t', type: 'object', properties: { a: { type: 'number' } } };
    expect(compiler.compile(v1).ok).toBe(true);
    // What McpSource does with a new listing: the schemas it no longer lists go first.
    compiler.retain(new Set([compiler.keyOf(v2) ?? '']));
    expect(compiler.compile(v2)).toMatchObject({ ok: true });
  });
});
