/**
 * REDIS_TLS on a real Redis Cluster that speaks only TLS (3 primaries, `tls-cluster yes`, a certificate
 * of a CA made for the test, trusted through NODE_EXTRA_CA_CERTS): the `loopgate` CLI connects with
 * REDIS_TLS=true and fails, naming REDIS_CLUSTER_NODES, without it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyWorkDir, runCli } from '../cli/cli-harness.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'loopgate-tls-cluster-'));
const file = (name: string) => join(dir, name);
const nodes: ChildProcess[] = [];
const work = emptyWorkDir();
let ports: number[] = [];

/** A CA and a server certificate for 127.0.0.1 signed by it. */
async function makeCertificates(): Promise<void> {
  const ssl = (...args: string[]) => run('openssl', args, { cwd: dir });
  await ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=loopgate test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
  );
  writeFileSync(file('san.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  await ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    'node.key',
    '-out',
    'node.csr',
  );
  await ssl(
    'x509',
    '-req',
    '-in',
    'node.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    'san.cnf',
    '-out',
    'node.crt',
  );
}

const tlsCli = (port: number, ...args: string[]) =>
  run('redis-cli', ['--tls', '--cacert', file('ca.crt'), '-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 20_000,
  });

async function freePorts(count: number): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const candidates = Array.from({ length: count }, (_, i) => base + i);
    const free = await Promise.all(
      [...candidates, ...candidates.map((p) => p + 10_000)].map(
        (p) =>
          new Promise<boolean>((resolve) => {
            const server = createServer();
            server.once('error', () => resolve(false));
            server.listen(p, '127.0.0.1', () => server.close(() => resolve(true)));
          }),
      ),
    );
    if (free.every(Boolean)) return candidates;
  }
  throw new Error('no free ports');
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('TLS cluster not ready');
}

beforeAll(async () => {
  await makeCertificates();
  ports = await freePorts(3);
  for (const port of ports) {
    nodes.push(
      spawn(
        'redis-server',
        [
          ...['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1'],
          ...['--tls-cert-file', file('node.crt'), '--tls-key-file', file('node.key')],
          ...['--tls-ca-cert-file', file('ca.crt'), '--tls-auth-clients', 'no', '--tls-cluster', 'yes'],
          ...['--cluster-enabled', 'yes', '--cluster-config-file', file(`nodes-${port}.conf`)],
          ...['--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', dir],
        ],
        { stdio: 'ignore' },
      ),
    );
  }
  for (const port of ports)
    await until(async () => (await tlsCli(port, 'ping')).stdout.trim() === 'PONG', 10_000);
  await run(
    'redis-cli',
    [
      '--tls',
      '--cacert',
      file('ca.crt'),
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-yes',
    ],
    { timeout: 30_000 },
  );
  await until(async () => {
    const infos = await Promise.all(ports.map((p) => tlsCli(p, 'cluster', 'info')));
    return infos.every((i) => i.stdout.includes('cluster_state:ok'));
  }, 30_000);
}, 90_000);

afterAll(async () => {
  for (const node of nodes) node.kill('SIGKILL');
  await Promise.all(
    nodes.map(
      (n) =>
        new Promise<void>((resolve) => (n.exitCode !== null ? resolve() : n.once('exit', () => resolve()))),
    ),
  );
  rmSync(dir, { recursive: true, force: true });
  work.remove();
});

describe('REDIS_TLS on a TLS-only Redis Cluster', () => {
  const env = (tls: boolean) => ({
    REDIS_CLUSTER_NODES: ports.map((p) => `127.0.0.1:${p}`).join(','),
    ...(tls ? { REDIS_TLS: 'true' } : {}),
    NODE_EXTRA_CA_CERTS: file('ca.crt'),
    LOOPGATE_PREFIX: '{lgtls}',
  });

  it('connects to every primary over TLS with REDIS_TLS=true', async () => {
    // Run headers on the three primaries (`-c` follows MOVED to the node of each slot).
    const runIds = ['run-tls-a', 'run-tls-b', 'run-tls-c', 'run-tls-d', 'run-tls-e', 'run-tls-f'];
    for (const [i, runId] of runIds.entries()) {
      await tlsCli(
        ports[0] ?? 0,
        '-c',
        'hset',
        `lgtls:run:{${runId}}:header`,
        ...['status', 'completed', 'step', '1', 'stopReason', 'completed'],
        ...['createdAt', String(1_767_000_000_000 + i), 'updatedAt', '1767000000000'],
        ...[
          'slack',
          JSON.stringify({ teamId: 'T0', channelId: 'C0', threadTs: '1.2', requestMessageTs: '1.2' }),
        ],
        ...['state', JSON.stringify({ requester: { userId: 'U0' }, question: 'q' })],
      );
    }
    const slots = await Promise.all(
      runIds.map(async (runId) =>
        (await tlsCli(ports[0] ?? 0, 'cluster', 'keyslot', `{${runId}}`)).stdout.trim(),
      ),
    );
    expect(new Set(slots).size).toBeGreaterThan(1);
    const result = await runCli(['runs', '--json'], env(true), work.dir);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect((JSON.parse(result.stdout) as Array<{ runId: string }>).map((r) => r.runId)).toEqual(
      [...runIds].reverse(),
    );
  });

  it('without REDIS_TLS cannot connect, and says which variable to check', async () => {
    const result = await runCli(['runs', '--json'], env(false), work.dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('check REDIS_CLUSTER_NODES');
  });
});
