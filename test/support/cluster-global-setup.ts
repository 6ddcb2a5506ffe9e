/**
 * vitest globalSetup of the `store-on-cluster` project: one local Redis Cluster (3 primaries) for the
 * store's test files, whose fixture (test/store/redis-fixture.ts) then connects to it instead of the
 * standalone Redis. The seeds reach the test files through vitest's provide/inject.
 */
import type { TestProject } from 'vitest/node';
import { startLocalCluster } from './redis-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `host:port` seeds of the project's local cluster; absent when tests run on the standalone Redis. */
    redisClusterSeeds: string[];
  }
}

export default async function setup(project: TestProject) {
  const cluster = await startLocalCluster({ masters: 3, replicasPerMaster: 0 });
  project.provide('redisClusterSeeds', cluster.seeds);
  return async () => {
    await cluster.stop();
  };
}
