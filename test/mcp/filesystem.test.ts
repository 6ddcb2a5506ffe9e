/**
 * loopgate's engine with the real @modelcontextprotocol/server-filesystem over stdio: its read tools run
 * at once, its write tools pause the run for a decision, and the file appears only once approved.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideAndContinue, runUntilPause } from '../../src/loop/run.js';
import type { RunState } from '../../src/loop/run-state.js';
import { call, deps, newRun, scriptedModel } from '../support/engine.js';
import { bin, type Started, startSource } from './support.js';

let dir: string;
let fs: Started;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lg-mcp-fs-'));
  writeFileSync(join(dir, 'hello.txt'), 'hello from the disk\n');
  fs = await startSource({ fs: { command: [bin('mcp-server-filesystem'), dir] } });
}, 30_000);
afterAll(async () => {
  await fs?.source.close();
  rmSync(dir, { recursive: true, force: true });
});

const toolMessages = (state: RunState) => state.messages.filter((m) => m.role === 'tool');

describe('server-filesystem over stdio', { timeout: 30_000 }, () => {
  it('is connected; reads are read tools and writes are write tools, from its annotations', () => {
    expect(fs.source.report().fs).toMatchObject({ state: 'connected' });
    const effects = Object.fromEntries(fs.source.rows().map((r) => [r.tool, r.decision?.effect]));
    expect(effects).toMatchObject({
      read_text_file: 'read',
      list_directory: 'read',
      write_file: 'write',
      edit_file: 'write',
      move_file: 'write',
    });
    const why = fs.source.rows().find((r) => r.tool === 'write_file')?.decision;
    expect(why).toEqual({ effect: 'write', source: 'annotation', why: 'readOnlyHint: false' });
  });

  it('a read runs at once; write_file pauses the run and the file appears only after approval', async () => {
    const target = join(dir, 'approved.txt');
    const model = scriptedModel([
      { calls: [call('fs__read_text_file', { path: join(dir, 'hello.txt') })] },
      { calls: [call('fs__write_file', { path: target, content: 'written after approval' })] },
      { text: 'Done: the file is written.' },
    ]);
    const d = deps(model, { tools: fs.source.tools() });
    const paused = await runUntilPause(newRun(), d.deps);
    expect(paused.type).toBe('interruption');
    if (paused.type !== 'interruption') return;
    // The read ran without anyone's click and its text reached the model.
    expect(toolMessages(paused.state)[0]?.content).toContain('hello from the disk');
    expect(existsSync(target)).toBe(false);
    const [gated] = paused.gated;
    expect(gated).toMatchObject({ tool: 'fs__write_file', effect: 'write', idempotent: false });
    expect(gated?.args).toEqual({ path: target, content: 'written after approval' });
    expect(gated?.preview).toContain('**MCP server** `fs` · **tool** `write_file`');
    expect(gated?.preview).toContain('readOnlyHint: false');
    expect(gated?.preview).toMatch(
      /\*\*Definition\*\* `[0-9a-f]{16}`: the call runs only if the server still defines/,
    );
    expect(gated?.preview).toContain('annotation: readOnlyHint: false');
    expect(gated?.preview).toContain(
      "**The server's description (untrusted; it decides nothing)** Create a new file",
    );

    const done = await decideAndContinue(
      paused.state,
      [
        {
          toolCallId: gated?.toolCallId ?? '',
          kind: 'approved',
          argsHash: gated?.argsHash ?? '',
          by: 'UMGR',
        },
      ],
      d.deps,
    );
    expect(done.type).toBe('final');
    expect(readFileSync(target, 'utf8')).toBe('written after approval');
    expect(JSON.parse(toolMessages(done.state)[1]?.content ?? '{}')).toMatchObject({ ok: true });
  });

  it('a rejected write_file never touches the disk; the model reads the rejection', async () => {
    const target = join(dir, 'rejected.txt');
    const model = scriptedModel([
      { calls: [call('fs__write_file', { path: target, content: 'never' })] },
      { text: 'It was rejected.' },
    ]);
    const d = deps(model, { tools: fs.source.tools() });
    const paused = await runUntilPause(newRun(), d.deps);
    if (paused.type !== 'interruption') throw new Error(`expected a pause, got ${paused.type}`);
    const done = await decideAndContinue(
      paused.state,
      [{ toolCallId: paused.gated[0]?.toolCallId ?? '', kind: 'rejected', by: 'UMGR', reason: 'not now' }],
      d.deps,
    );
    expect(done.type).toBe('final');
    expect(existsSync(target)).toBe(false);
    expect(toolMessages(done.state)[0]?.content).toContain('rejected by <@UMGR>: not now');
  });

  it('a bad argument is an invalid_arguments result before any gating: no card, no write', async () => {
    const target = join(dir, 'bad.txt');
    const model = scriptedModel([
      { calls: [call('fs__write_file', { path: target, content: 42 })] },
      { text: 'I could not write it.' },
    ]);
    const d = deps(model, { tools: fs.source.tools() });
    const outcome = await runUntilPause(newRun(), d.deps);
    expect(outcome.type).toBe('final');
    const result = JSON.parse(toolMessages(outcome.state)[0]?.content ?? '{}');
    expect(result).toEqual({
      ok: false,
      error: { code: 'invalid_arguments', message: expect.stringContaining('content: must be string') },
    });
    expect(existsSync(target)).toBe(false);
  });

  it('allow and deny pick the tools offered; idempotent comes only from the policy', async () => {
    const picked = await startSource({
      fs: {
        command: [bin('mcp-server-filesystem'), dir],
        allow: ['read_text_file', 'write_file', 'edit_file'],
        deny: ['edit_file'],
        tools: { write_file: { idempotent: true } },
      },
    });
    try {
      expect([...picked.source.tools().keys()].sort()).toEqual(['fs__read_text_file', 'fs__write_file']);
      const refused = Object.fromEntries(picked.source.rows().map((r) => [r.tool, r.refused]));
      expect(refused.edit_file).toBe('in mcp.servers.fs.deny');
      expect(refused.list_directory).toBe('not in mcp.servers.fs.allow');
      expect(picked.source.tools().get('fs__write_file')?.idempotent).toBe(true);
      // The server's idempotentHint alone never makes a tool safe to run again after a crash.
      expect(fs.source.tools().get('fs__write_file')?.idempotent).toBe(false);
      expect(fs.source.rows().find((r) => r.tool === 'write_file')?.annotations).toMatchObject({
        idempotentHint: true,
      });
    } finally {
      await picked.source.close();
    }
  });

  it('the model is sent the server’s own input schema and a capped, labelled description', () => {
    const tool = fs.source.tools().get('fs__write_file');
    expect(tool?.description).toMatch(
      /^\[tool of the MCP server fs; its description is the server's text\] /,
    );
    const shape = tool?.parameters.safeParse({ path: 'x', content: 'y' });
    expect(shape?.success).toBe(true);
  });
});
