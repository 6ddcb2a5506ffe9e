import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A real Redis Cluster on 127.0.0.1, started by a test file for itself: `masters` primaries, each with
 * `replicasPerMaster` replicas, from the machine's redis-server (cluster mode, no persistence). Each file
 * gets its own ports, so a test that fails a node over disturbs nobody else.
 */
export interface LocalCluster {
  /** Every node's port; the first `masters` were created as primaries. */
  ports: number[];
  /** Seed nodes as `host:port`, the form REDIS_CLUSTER_NODES-style settings take. */
  seeds: string[];
  /** redis-cli against one node, returning its stdout. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The port of the primary now serving `key`'s slot. */
  primaryFor(key: string): Promise<number>;
  /** The ports of the replicas now following the primary on `port`. */
  replicasOf(port: number): Promise<number[]>;
  /** Kill one node (SIGKILL) and forget it. */
  kill(port: number): Promise<void>;
  /** Wait until every live node reports cluster_state:ok and agrees on one primary per slot range. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface LocalClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
}

export async function startLocalCluster(options: LocalClusterOptions = {}): Promise<LocalCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 0;
  const count = masters * (1 + replicas);
  const ports = await freeClusterPorts(count);
  const dir = await mkdtemp(join(tmpdir(), 'loopgate-cluster-'));
  const nodes = new Map<number, ChildProcess>();

  const cli = async (port: number, ...args: string[]): Promise<string> => {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
      timeout: 20_000,
    });
    return stdout;
  };

  for (const port of ports) {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '2000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    nodes.set(port, child);
  }

  const stop = async (): Promise<void> => {
    for (const child of nodes.values()) child.kill('SIGKILL');
    await Promise.all(
      [...nodes.values()].map(
        (child) =>
          new Promise<void>((resolve) =>
            child.exitCode !== null ? resolve() : child.once('exit', () => resolve()),
          ),
      ),
    );
    nodes.clear();
    await rm(dir, { recursive: true, force: true });
  };

  try {
    for (const port of ports) await waitFor(async () => (await cli(port, 'ping')).trim() === 'PONG', 10_000);
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const liveNodes = (): number[] => [...nodes.keys()];

  const clusterNodes = async (port: number) =>
    (await cli(port, 'cluster', 'nodes'))
      .trim()
      .split('\n')
      .map((line) => {
        const [id, address, flags, masterId, , , , link, ...slots] = line.split(' ');
        return {
          id: id ?? '',
          port: Number((address ?? '').split('@')[0]?.split(':')[1]),
          flags: (flags ?? '').split(','),
          masterId: masterId ?? '-',
          connected: link === 'connected',
          slots,
        };
      });

  const waitHealthy = async (timeoutMs = 30_000): Promise<void> => {
    await waitFor(async () => {
      for (const port of liveNodes()) {
        const info = await cli(port, 'cluster', 'info');
        if (!info.includes('cluster_state:ok')) return false;
        const view = await clusterNodes(port);
        if (view.some((n) => n.flags.includes('fail?') && nodes.has(n.port))) return false;
        // Every replica that is alive must be following a primary and have finished its sync.
        const me = view.find((n) => n.flags.includes('myself'));
        if (me?.flags.includes('slave')) {
          const repl = await cli(port, 'info', 'replication');
          if (!repl.includes('master_link_status:up')) return false;
        }
      }
      return true;
    }, timeoutMs);
  };

  await waitHealthy();

  return {
    ports,
    seeds: ports.map((p) => `127.0.0.1:${p}`),
    cli,
    waitHealthy,
    stop,
    async primaryFor(key) {
      const slot = Number((await cli(liveNodes()[0] ?? ports[0] ?? 0, 'cluster', 'keyslot', key)).trim());
      for (const port of liveNodes()) {
        const view = await clusterNodes(port);
        const owner = view.find(
          (n) =>
            n.flags.includes('master') &&
            !n.flags.includes('fail') &&
            n.slots.some((range) => {
              const [from, to] = range.split('-').map(Number);
              return from !== undefined && slot >= from && slot <= (to ?? from);
            }),
        );
        if (owner) return owner.port;
      }
      throw new Error(`no primary serves the slot of ${key}`);
    },
    async replicasOf(port) {
      const view = await clusterNodes(port);
      const me = view.find((n) => n.port === port);
      return view.filter((n) => n.masterId === me?.id && nodes.has(n.port)).map((n) => n.port);
    },
    async kill(port) {
      const child = nodes.get(port);
      if (!child) return;
      nodes.delete(port);
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
    },
  };
}

/** Bounded polling: resolves once `check` is true, throws after `timeoutMs`. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`local Redis Cluster not ready in ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

/** `count` consecutive free ports whose cluster bus ports (port + 10000) are free too. */
async function freeClusterPorts(count: number): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const all = [...ports, ...ports.map((p) => p + 10_000)];
    if ((await Promise.all(all.map(isFree))).every(Boolean)) return ports;
  }
  throw new Error('no free ports for a local Redis Cluster');
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
