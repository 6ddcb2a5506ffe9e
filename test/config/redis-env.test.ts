import { describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';
import { describeTarget, parseSeedNodes, redisTarget } from '../../src/config/redis-target.js';
import { clusterOptions } from '../../src/queue/connection.js';

const SECRETS = {
  SLACK_BOT_TOKEN: 'xoxb-1-2-abc',
  SLACK_SIGNING_SECRET: 'signing-secret-value',
  OPENAI_API_KEY: 'sk-test-key',
};

const load = (vars: Record<string, string>) => loadEnv({ ...SECRETS, ...vars }, { envFile: false });

function problemsOf(vars: Record<string, string>) {
  try {
    load(vars);
  } catch (error) {
    if (error instanceof ConfigError) return { problems: error.problems, message: error.message };
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('Redis Cluster in the environment', () => {
  it('REDIS_CLUSTER_NODES gives a cluster target with TLS and credentials from their variables', () => {
    const env = load({
      REDIS_CLUSTER_NODES: '10.0.0.1:6379, redis-2.internal:6380,[fd00::3]:7000',
      REDIS_TLS: 'true',
      REDIS_USERNAME: 'loopgate',
      REDIS_PASSWORD: 'cluster-secret',
    });
    expect(redisTarget(env)).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 6379 },
        { host: 'redis-2.internal', port: 6380 },
        { host: 'fd00::3', port: 7000 },
      ],
      tls: true,
      username: 'loopgate',
      password: 'cluster-secret',
    });
    expect(describeTarget(redisTarget(env))).toBe(
      'Redis Cluster 10.0.0.1:6379,redis-2.internal:6380,[fd00::3]:7000 (TLS)',
    );
  });

  it('without REDIS_CLUSTER_NODES the target is REDIS_URL, as before, and may take the password from REDIS_PASSWORD', () => {
    expect(redisTarget(load({}))).toEqual({ kind: 'standalone', url: 'redis://127.0.0.1:6379' });
    expect(redisTarget(load({ REDIS_URL: 'rediss://cache:6380/2', REDIS_PASSWORD: 'pw-from-env' }))).toEqual({
      kind: 'standalone',
      url: 'rediss://cache:6380/2',
      password: 'pw-from-env',
    });
  });

  it.each(['redis://10.0.0.1:6379', '10.0.0.1', '10.0.0.1:0', '10.0.0.1:70000', 'a:1,,b:2', ' , ', 'a b:1'])(
    'refuses REDIS_CLUSTER_NODES=%j, naming it',
    (value) => {
      const { problems, message } = problemsOf({ REDIS_CLUSTER_NODES: value });
      expect(problems.map((p) => p.key)).toEqual(['REDIS_CLUSTER_NODES']);
      expect(message).toContain('REDIS_CLUSTER_NODES: invalid value');
      expect(message).toContain('host:port,host:port');
    },
  );

  it('refuses REDIS_URL together with REDIS_CLUSTER_NODES, and REDIS_TLS without it', () => {
    expect(problemsOf({ REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'a:7000' }).problems).toEqual([
      { key: 'REDIS_URL', problem: expect.stringContaining('set together with REDIS_CLUSTER_NODES') },
    ]);
    expect(problemsOf({ REDIS_TLS: 'true' }).problems).toEqual([
      { key: 'REDIS_TLS', problem: expect.stringContaining('rediss://') },
    ]);
    expect(
      problemsOf({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_TLS: 'yes' }).problems.map((p) => p.key),
    ).toEqual(['REDIS_TLS']);
  });

  it('refuses credentials given twice, without echoing the password', () => {
    const { problems, message } = problemsOf({
      REDIS_URL: 'redis://admin:url-secret@cache:6379',
      REDIS_USERNAME: 'loopgate',
      REDIS_PASSWORD: 'env-secret-value',
    });
    expect(problems.map((p) => p.key)).toEqual(['REDIS_USERNAME', 'REDIS_PASSWORD']);
    expect(message).not.toContain('secret');
  });

  it('parses seeds strictly', () => {
    expect(parseSeedNodes('127.0.0.1:7000')).toEqual([{ host: '127.0.0.1', port: 7000 }]);
    expect(parseSeedNodes('host-:1')).toBeNull();
    expect(parseSeedNodes('[::1]:7000')).toEqual([{ host: '::1', port: 7000 }]);
  });
});

describe('cluster connection options per role', () => {
  const target = { kind: 'cluster' as const, nodes: [{ host: 'a', port: 1 }], tls: false };

  it('passes the node options (BullMQ reads maxRetriesPerRequest there) and turns the offline queue off for producers', () => {
    expect(clusterOptions(target, { maxRetriesPerRequest: null })).toEqual({
      redisOptions: { maxRetriesPerRequest: null },
    });
    expect(clusterOptions(target, { maxRetriesPerRequest: 2, enableOfflineQueue: false })).toEqual({
      enableOfflineQueue: false,
      redisOptions: { maxRetriesPerRequest: 2, enableOfflineQueue: false },
    });
  });

  it('with REDIS_TLS, reaches every node over TLS and keeps seed host names for the certificates', () => {
    const options = clusterOptions({ ...target, tls: true }, { password: 'p' });
    expect(options.redisOptions).toEqual({ password: 'p', tls: {} });
    const resolved: string[] = [];
    options.dnsLookup?.('redis-1.internal', (_err, address) => resolved.push(address));
    expect(resolved).toEqual(['redis-1.internal']);
  });
});
