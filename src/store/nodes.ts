import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './scripts.js';

/**
 * The connections a keyspace-wide command (SCAN) must visit: on a Cluster every primary (each holds
 * its own slots' keys), else the one server.
 */
export function primaries(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}
