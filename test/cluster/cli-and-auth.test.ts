/**
 * The `loopgate` CLI and the connection factory on a real Redis Cluster (3 primaries) that requires an
 * ACL user: REDIS_CLUSTER_NODES with REDIS_USERNAME / REDIS_PASSWORD, listings from every primary, and a
 * clear error naming REDIS_CLUSTER_NODES when the credentials are wrong.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../demo/lib/free-port.js';
import { redisTarget } from '../../src/config/redis-target.js';
import { createRedisConnection, type RedisClient } from '../../src/queue/connection.js';
import { createStore, type Store } from '../../src/store/index.js';
import { emptyWorkDir, runCli } from '../cli/cli-harness.js';
import { killAllLoopgate, spawnLoopgate } from '../e2e/support/loopgate-process.js';
import { tempDir } from '../e2e/support/temp-config.js';
import { newState, slack, T0 } from '../store/run-state-fixture.js';
import { type LocalCluster, startLocalCluster } from '../support/redis-cluster.js';

const USER = 'loopgate';
const PASSWORD = 'cluster-acl-password';

let cluster: LocalCluster;
let redis: RedisClient;
let store: Store;
const work = emptyWorkDir();
const runIds = Array.from({ length: 9 }, (_, i) => `run-cli-${i}`);

beforeAll(async () => {
  cluster = await startLocalCluster({ masters: 3 });
  // The default user stays open for the harness's redis-cli; loopgate authenticates as USER.
  for (const port of cluster.ports) {
    await cluster.cli(port, 'acl', 'setuser', USER, 'on', `>${PASSWORD}`, '~*', '&*', '+@all');
  }
  redis = createRedisConnection(
    redisTarget({
      REDIS_URL: 'redis://unused',
      REDIS_CLUSTER_NODES: cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })),
      REDIS_USERNAME: USER,
      REDIS_PASSWORD: PASSWORD,
    }),
    'store',
  );
  store = createStore(redis, { prefix: '{lgcli}' });
  for (const [i, runId] of runIds.entries()) {
    await store.runs.createRun({ ...newState(runId), createdAt: T0 + i }, slack);
  }
}, 60_000);
afterAll(async () => {
  await killAllLoopgate();
  redis?.disconnect();
  await cluster?.stop();
  work.remove();
});

const env = (password = PASSWORD) => ({
  REDIS_CLUSTER_NODES: cluster.seeds.join(','),
  REDIS_USERNAME: USER,
  REDIS_PASSWORD: password,
  LOOPGATE_PREFIX: '{lgcli}',
});

describe('loopgate on a Redis Cluster with an ACL user', () => {
  it('connects as that user: the runs stored are on the primaries that serve their slots', async () => {
    const owners = new Set<number>();
    for (const runId of runIds) {
      const header = store.context.keys.run(runId).header;
      const owner = await cluster.primaryFor(header);
      expect((await cluster.cli(owner, 'exists', header)).trim()).toBe('1');
      owners.add(owner);
    }
    expect(owners.size).toBeGreaterThan(1);
    const clients = (await Promise.all(cluster.ports.map((p) => cluster.cli(p, 'client', 'list')))).join(
      '\n',
    );
    const ours = clients.split('\n').filter((line) => line.includes('name=loopgate-store '));
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.every((line) => line.includes(` user=${USER} `))).toBe(true);
  });

  it('`loopgate runs` lists the runs of every primary, and `trace` reads one', async () => {
    const result = await runCli(['runs', '--json', '--limit', '50'], env(), work.dir);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const listed = (JSON.parse(result.stdout) as Array<{ runId: string }>).map((r) => r.runId);
    // All working runs, from every primary, in the order that needs attention: the oldest first.
    expect(listed).toEqual(runIds);
    const trace = await runCli(['trace', 'run-cli-4', '--json'], env(), work.dir);
    expect(trace.code).toBe(0);
    expect(trace.stdout).toContain('run-cli-4');
  });

  it('`loopgate approvals` and `audit` read the pending index and the audit stream of approvals of runs on different primaries', async () => {
    const now = Date.now();
    const decided: string[] = [];
    const waiting: string[] = [];
    for (const runId of runIds.slice(0, 4)) {
      const lease = await store.leases.acquire(runId, 'w', 30_000);
      if (!lease.acquired) throw new Error('lease not acquired');
      const [record] = await store.approvals.createApprovals({
        runId,
        fence: lease.fence,
        requester: 'U0ALICE',
        now,
        approvals: [
          {
            call: {
              toolCallId: 'call_1',
              tool: 'http_request',
              effect: 'write',
              args: { url: 'https://deploy.example/x' },
              argsHash: 'b'.repeat(64),
              idempotent: false,
            },
            approvers: { users: ['U0M'], groups: [] },
            expiresAt: now + 3_600_000,
          },
        ],
      });
      if (!record) throw new Error('approval not created');
      if (decided.length < 2) {
        await store.approvals.decide({
          approvalId: record.approvalId,
          decision: 'approved',
          decidedBy: 'U0M',
          now,
        });
        decided.push(record.approvalId);
      } else {
        waiting.push(record.approvalId);
      }
    }
    const pending = await runCli(['approvals', '--json'], env(), work.dir);
    expect(pending).toMatchObject({ code: 0, stderr: '' });
    expect(
      (JSON.parse(pending.stdout) as Array<{ approvalId: string }>).map((a) => a.approvalId).sort(),
    ).toEqual(waiting.sort());
    const audit = await runCli(['audit', '--since', '1h'], env(), work.dir);
    expect(audit).toMatchObject({ code: 0, stderr: '' });
    const entries = audit.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { approvalId: string; decision: string });
    expect(entries.map((e) => [e.approvalId, e.decision])).toEqual(decided.map((id) => [id, 'approved']));
  });

  it('names REDIS_CLUSTER_NODES, not the password, when the cluster refuses the credentials', async () => {
    const result = await runCli(['runs'], env('wrong-password-here'), work.dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot connect to Redis Cluster ${cluster.seeds.join(',')}`);
    expect(result.stderr).toContain('check REDIS_CLUSTER_NODES');
    expect(result.stderr).not.toContain('wrong-password-here');
  });
});

describe('REDIS_URL pointed at a node of the cluster', () => {
  it('stops the worker, the bot and the CLI at start-up, naming REDIS_URL and REDIS_CLUSTER_NODES', async () => {
    const config = tempDir();
    try {
      const policy = config.write('loopgate.yaml', '{}\n');
      const common = {
        REDIS_URL: `redis://${cluster.seeds[0]}`,
        LOOPGATE_CONFIG: policy,
        SLACK_BOT_TOKEN: 'xoxb-cluster-test',
        SLACK_API_URL: 'http://127.0.0.1:9/api/',
        LOG_LEVEL: 'silent',
      };
      const worker = spawnLoopgate(
        'worker',
        { ...common, OPENAI_API_KEY: 'sk-x', METRICS_PORT: '0' },
        config.dir,
      );
      const bot = spawnLoopgate(
        'bot',
        { ...common, SLACK_SIGNING_SECRET: 's', PORT: String(await freePort()), BOT_METRICS_PORT: '0' },
        config.dir,
      );
      for (const p of [worker, bot]) {
        expect((await p.exit).code).toBe(1);
        expect(p.stderr()).toContain(
          'REDIS_URL: points at a node of a Redis Cluster; set REDIS_CLUSTER_NODES',
        );
      }
      const cli = await runCli(['runs'], { REDIS_URL: `redis://${cluster.seeds[0]}` }, work.dir);
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain('REDIS_URL: points at a node of a Redis Cluster');
    } finally {
      config.remove();
    }
  }, 60_000);
});
