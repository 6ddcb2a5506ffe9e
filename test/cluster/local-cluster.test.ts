import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalCluster, startLocalCluster } from '../support/redis-cluster.js';

// The harness the Cluster tests stand on: a real 3-primary cluster with a replica each, and a failover.
describe('the local Redis Cluster harness', () => {
  let cluster: LocalCluster;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startLocalCluster({ masters: 3, replicasPerMaster: 1 });
    client = new Cluster(cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })));
  }, 60_000);

  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('serves keys on three primaries and moves a slot to its replica on CLUSTER FAILOVER', async () => {
    await client.set('{a}x', '1');
    await client.set('{b}x', '2');
    await client.set('{c}x', '3');
    expect(await client.mget('{a}x')).toEqual(['1']);
    const primaries = new Set(await Promise.all(['{a}x', '{b}x', '{c}x'].map((k) => cluster.primaryFor(k))));
    expect(primaries.size).toBeGreaterThan(1);

    const before = await cluster.primaryFor('{a}x');
    const [replica] = await cluster.replicasOf(before);
    expect(replica).toBeDefined();
    await cluster.cli(replica as number, 'cluster', 'failover');
    await expect.poll(() => cluster.primaryFor('{a}x'), { timeout: 20_000, interval: 100 }).toBe(replica);
    await cluster.waitHealthy();
    expect(await client.get('{a}x')).toBe('1');
  }, 60_000);
});
