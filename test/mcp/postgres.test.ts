/**
 * The PostgreSQL on this machine (127.0.0.1:5432, database `test`) behind the real
 * @modelcontextprotocol/server-postgres over stdio: a question answered from a real query, read-only.
 * The server does not annotate its `query` tool, so without an override it is a write (the MCP default).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../src/loop/model-port.js';
import { runUntilPause } from '../../src/loop/run.js';
import { call, deps, newRun, scriptedModel } from '../support/engine.js';
import { bin, type Started, startSource } from './support.js';

const DB = 'postgresql://postgres@127.0.0.1:5432/test';
const schema = `lg_mcp_${randomBytes(4).toString('hex')}`;
let admin: InstanceType<typeof pg.Client>;
let readOnly: Started;
let unannotated: Started;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: DB });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.query(`create table ${schema}.incidents (id serial primary key, service text, open boolean)`);
  await admin.query(
    `insert into ${schema}.incidents (service, open) values ('payments', true), ('payments', true), ('search', false), ('payments', false)`,
  );
  const command = [bin('mcp-server-postgres'), DB];
  readOnly = await startSource({ pg: { command, effect: 'read' } });
  unannotated = await startSource({ pg: { command, approvers: ['U0MGR'] } });
}, 30_000);
afterAll(async () => {
  await readOnly?.source.close();
  await unannotated?.source.close();
  await admin?.query(`drop schema if exists ${schema} cascade`);
  await admin?.end();
});

const lastToolText = (req: ModelRequest) => {
  const last = req.messages.at(-1);
  return last?.role === 'tool' ? last.content : '';
};

describe('server-postgres over stdio, on the local PostgreSQL', { timeout: 30_000 }, () => {
  it('answers a question from a real query, run at once as a read (mcp.servers.pg.effect: read)', async () => {
    const sql = `select count(*)::int as open from ${schema}.incidents where service = 'payments' and open`;
    const model = scriptedModel([
      { calls: [call('pg__query', { sql })] },
      (req) => {
        const rows = JSON.parse(JSON.parse(lastToolText(req)).data) as Array<{ open: number }>;
        return { text: `payments has ${rows[0]?.open} open incidents.` };
      },
    ]);
    const d = deps(model, { tools: readOnly.source.tools() });
    const outcome = await runUntilPause(newRun(), d.deps);
    expect(outcome.type).toBe('final');
    expect(outcome.state.answer).toEqual(['payments has 2 open incidents.']);
  });

  it('the server keeps its transaction read-only: a write through it fails and changes nothing', async () => {
    const tool = readOnly.source.tools().get('pg__query');
    const ctx = {
      signal: new AbortController().signal,
      idempotencyKey: 'r:c',
      runId: 'r',
      toolCallId: 'c',
      requester: { userId: 'U1' },
      logger: readOnly.logger,
    };
    await expect(tool?.execute({ sql: `delete from ${schema}.incidents` }, ctx)).rejects.toThrow(
      /read-only transaction/,
    );
    const { rows } = await admin.query(`select count(*)::int as n from ${schema}.incidents`);
    expect(rows[0]?.n).toBe(4);
  });

  it('without the override its unannotated query tool is a write: the run pauses for approval', async () => {
    expect(unannotated.source.rows()[0]?.decision).toEqual({
      effect: 'write',
      source: 'default',
      why: 'no readOnlyHint (MCP default: not read-only)',
    });
    const model = scriptedModel([{ calls: [call('pg__query', { sql: 'select 1' })] }]);
    const outcome = await runUntilPause(newRun(), deps(model, { tools: unannotated.source.tools() }).deps);
    expect(outcome.type).toBe('interruption');
  });
});
