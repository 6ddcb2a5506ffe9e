import { defineConfig } from 'vitest/config';

const shared = {
  // Integration tests share one Redis and spawn processes: keep files parallel but bounded for 2 cores.
  testTimeout: 20_000,
  hookTimeout: 30_000,
};

export default defineConfig({
  test: {
    maxWorkers: 2,
    projects: [
      { test: { name: 'default', include: ['test/**/*.test.ts'], ...shared } },
      {
        // The store's integration tests once more, on a local Redis Cluster of 3 primaries.
        test: {
          name: 'store-on-cluster',
          include: ['test/store/**/*.test.ts'],
          globalSetup: ['test/support/cluster-global-setup.ts'],
          ...shared,
        },
      },
    ],
  },
});
