/**
 * A cancel reaches a read in flight: the call is cancelled on the server (notifications/cancelled) and
 * the model gets a `cancelled` result, without waiting for the timeout. An approved write is not cut off
 * half-way. The worker's check reads the run header's `cancel` field in the real Redis.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeCall } from '../../src/loop/execute.js';
import { redisRunCancelled } from '../../src/mcp/run-cancelled.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { runIdForEvent } from '../../src/store/ids.js';
import { createStore } from '../../src/store/store.js';
import { callLimits } from '../support/call-limits.js';
import { silentLogger } from '../support/engine.js';
import { misbehaving, startSource, waitFor } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'lg-mcp-cancel-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const callCtx = { runId: 'run1', toolCallId: 'call1', requester: { userId: 'U1' }, logger: silentLogger };
const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

describe('cancelling a run during an MCP call', { timeout: 30_000 }, () => {
  it('a read in flight is cancelled on the server and returns cancelled, long before its timeout', async () => {
    const log = join(dir, 'cancel.log');
    let cancelled = false;
    const { source } = await startSource(
      { bad: { command: misbehaving('hang', log), timeoutSeconds: 60 } },
      { runCancelled: async () => cancelled },
    );
    try {
      const tool = source.tools().get('bad__hang');
      if (!tool) throw new Error('no bad__hang');
      const started = performance.now();
      const pending = executeCall(tool, {}, callCtx, callLimits(60_000, 16_000));
      setTimeout(() => {
        cancelled = true;
      }, 200);
      const { result } = await pending;
      expect(result).toEqual({
        ok: false,
        error: {
          code: 'cancelled',
          message: 'bad__hang was stopped on the server because the run was cancelled.',
        },
      });
      expect(performance.now() - started).toBeLessThan(10_000);
      await waitFor('the cancel notification', () => read(log).startsWith('cancelled '));
    } finally {
      await source.close();
    }
  });

  it('an approved write runs to its end even when the run is cancelled meanwhile', async () => {
    const file = join(dir, 'lines.txt');
    const { source } = await startSource(
      { slow: { command: misbehaving('slow-write', file, 1_500), approvers: ['U0MGR'] } },
      { runCancelled: async () => true },
    );
    try {
      const tool = source.tools().get('slow__append_line');
      if (!tool) throw new Error('no slow__append_line');
      const ctx = { ...callCtx, signal: new AbortController().signal, idempotencyKey: 'run1:call1' };
      await tool.preview?.({ line: 'kept' }, ctx);
      const { result } = await executeCall(tool, { line: 'kept' }, callCtx, callLimits(30_000, 16_000));
      expect(result.ok).toBe(true);
      expect(read(file)).toBe('kept\n');
    } finally {
      await source.close();
    }
  });

  it('the worker’s check reads the run header’s cancel field', async () => {
    const redis = createRedisConnection(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'store');
    const prefix = `{lgmcpcancel${process.pid}}`;
    const store = createStore(redis, { prefix });
    const runId = runIdForEvent(`EvMcpCancel${process.pid}`);
    const header = store.context.keys.run(runId).header;
    try {
      const check = redisRunCancelled(store);
      await redis.hset(header, 'status', 'running');
      expect(await check(runId)).toBe(false);
      await store.runs.requestCancel(runId, { by: 'U1', at: 1 });
      expect(await check(runId)).toBe(true);
    } finally {
      await redis.del(header);
      redis.disconnect();
    }
  });
});
