import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import { loadEnv, SLACK_WEB_API } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';
import { LoopgateError } from '../../src/loop/errors.js';

/** The secrets every process needs, valid. */
const SECRETS = {
  SLACK_BOT_TOKEN: 'xoxb-1-2-abc',
  SLACK_SIGNING_SECRET: 'signing-secret-value',
  OPENAI_API_KEY: 'sk-test-key',
};

/** Runs loadEnv without any dotenv file and returns the ConfigError it throws. */
function configErrorOf(source: Record<string, string | undefined>, need?: 'bot' | 'worker' | 'all') {
  try {
    loadEnv(source, { envFile: false, need });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected loadEnv to throw a ConfigError');
}

describe('loadEnv: defaults', () => {
  it('applies every default when only the secrets are set', () => {
    const env = loadEnv({ ...SECRETS }, { envFile: false });
    expect(env).toEqual({
      ...SECRETS,
      SLACK_APP_TOKEN: undefined,
      SLACK_API_URL: SLACK_WEB_API,
      OPENAI_BASE_URL: undefined,
      OPENAI_MODEL: 'gpt-4.1-mini',
      REDIS_URL: 'redis://127.0.0.1:6379',
      PORT: 3000,
      LOOPGATE_CONFIG: './loopgate.yaml',
      LOOPGATE_PREFIX: '{loopgate}',
      LOG_LEVEL: 'info',
      SLACK_AGENT_SURFACES: 'auto',
      OPENAI_MAX_RETRIES: 4,
      OPENAI_TIMEOUT_MS: 60_000,
      WORKER_CONCURRENCY: 500,
      WORKER_MAX_EVENT_LOOP_DELAY_MS: 100,
      WORKER_MAX_HEAP_PERCENT: 80,
      WORKER_MAX_RUNS_PER_REQUESTER: 5,
      WORKER_LOCK_MS: 20_000,
      METRICS_PORT: 9091,
      BOT_METRICS_PORT: 9092,
      RETENTION_DAYS: 7,
      REDIS_WAIT_REPLICAS: 0,
      REDIS_WAIT_TIMEOUT_MS: 500,
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'false',
    });
  });

  it('reads set values, converting numbers', () => {
    const env = loadEnv(
      {
        ...SECRETS,
        SLACK_APP_TOKEN: 'xapp-1-A',
        SLACK_API_URL: 'http://127.0.0.1:4100/api/',
        OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1',
        OPENAI_MODEL: 'llama-3',
        REDIS_URL: 'rediss://cache.internal:6380/2',
        PORT: '8080',
        LOOPGATE_CONFIG: '/etc/loopgate.yaml',
        LOOPGATE_PREFIX: 'acme-{lg}',
        LOG_LEVEL: 'debug',
        OPENAI_MAX_RETRIES: '0',
        OPENAI_TIMEOUT_MS: '1500',
        WORKER_CONCURRENCY: '16',
        RETENTION_DAYS: '30',
      },
      { envFile: false },
    );
    expect(env).toMatchObject({
      SLACK_APP_TOKEN: 'xapp-1-A',
      SLACK_API_URL: 'http://127.0.0.1:4100/api/',
      OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1',
      OPENAI_MODEL: 'llama-3',
      REDIS_URL: 'rediss://cache.internal:6380/2',
      PORT: 8080,
      LOOPGATE_CONFIG: '/etc/loopgate.yaml',
      LOOPGATE_PREFIX: 'acme-{lg}',
      LOG_LEVEL: 'debug',
      OPENAI_MAX_RETRIES: 0,
      OPENAI_TIMEOUT_MS: 1500,
      WORKER_CONCURRENCY: 16,
      RETENTION_DAYS: 30,
    });
  });

  it('treats empty values as unset, as a copied .env.example leaves them', () => {
    const env = loadEnv(
      { ...SECRETS, SLACK_APP_TOKEN: '', PORT: '', OPENAI_BASE_URL: '' },
      { envFile: false },
    );
    expect(env.SLACK_APP_TOKEN).toBeUndefined();
    expect(env.OPENAI_BASE_URL).toBeUndefined();
    expect(env.PORT).toBe(3000);
  });

  it('ends SLACK_API_URL with a slash so method names resolve below it', () => {
    const env = loadEnv({ ...SECRETS, SLACK_API_URL: 'http://127.0.0.1:4100/api' }, { envFile: false });
    expect(env.SLACK_API_URL).toBe('http://127.0.0.1:4100/api/');
  });
});

describe('loadEnv: errors name the key and what is expected', () => {
  it('names a missing key with what it expects', () => {
    const error = configErrorOf({ SLACK_SIGNING_SECRET: 's', OPENAI_API_KEY: 'k' });
    expect(error.message).toContain('SLACK_BOT_TOKEN: required (a bot token starting with xoxb-)');
    expect(error.problems.map((p) => p.key)).toEqual(['SLACK_BOT_TOKEN']);
  });

  it('is a LoopgateError with code config_error', () => {
    const error = configErrorOf({});
    expect(error).toBeInstanceOf(LoopgateError);
    expect(error.code).toBe('config_error');
    expect(error.name).toBe('ConfigError');
    expect(error.source).toBe('environment');
  });

  it('names a bad URL and shows the value, since it is not a secret', () => {
    const error = configErrorOf({ ...SECRETS, OPENAI_BASE_URL: 'localhost:8000' });
    expect(error.problems).toEqual([
      {
        key: 'OPENAI_BASE_URL',
        problem: expect.stringMatching(/^invalid value "localhost:8000" \(.*http\(s\) URL/),
      },
    ]);
  });

  it.each([
    ['SLACK_API_URL', 'ftp://slack.example/api/'],
    ['SLACK_API_URL', 'not a url'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['REDIS_URL', '127.0.0.1:6379'],
  ])('refuses %s=%s', (key, value) => {
    const error = configErrorOf({ ...SECRETS, [key]: value });
    expect(error.problems.map((p) => p.key)).toEqual([key]);
    expect(error.message).toContain(`${key}: invalid value "${value}"`);
  });

  it('names every bad and missing key at once, in a stable order', () => {
    const error = configErrorOf({
      SLACK_BOT_TOKEN: 'xoxp-user-token',
      SLACK_APP_TOKEN: 'xoxb-wrong-kind',
      SLACK_SIGNING_SECRET: 's',
      REDIS_URL: 'http://nope',
      PORT: '0',
      LOG_LEVEL: 'loud',
      OPENAI_TIMEOUT_MS: '1e3',
      WORKER_CONCURRENCY: '1.5',
      RETENTION_DAYS: '-1',
    });
    expect(error.problems.map((p) => p.key)).toEqual([
      'SLACK_BOT_TOKEN',
      'SLACK_APP_TOKEN',
      'OPENAI_API_KEY',
      'REDIS_URL',
      'PORT',
      'LOG_LEVEL',
      'OPENAI_TIMEOUT_MS',
      'WORKER_CONCURRENCY',
      'RETENTION_DAYS',
    ]);
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('invalid configuration in environment:');
    expect(lines).toHaveLength(10);
    expect(error.message).toContain('OPENAI_API_KEY: required');
    expect(error.message).toContain('PORT: invalid value "0" (an integer from 1 to 65535');
    expect(error.message).toContain('LOG_LEVEL: invalid value "loud" (one of fatal, error, warn, info');
  });

  it('reads REDIS_WAIT_REPLICAS and a bounded REDIS_WAIT_TIMEOUT_MS, naming either when bad', () => {
    const env = loadEnv(
      { ...SECRETS, REDIS_WAIT_REPLICAS: '2', REDIS_WAIT_TIMEOUT_MS: '250' },
      { envFile: false },
    );
    expect(env).toMatchObject({ REDIS_WAIT_REPLICAS: 2, REDIS_WAIT_TIMEOUT_MS: 250 });
    const error = configErrorOf({ ...SECRETS, REDIS_WAIT_REPLICAS: '17', REDIS_WAIT_TIMEOUT_MS: '2001' });
    expect(error.problems.map((p) => p.key)).toEqual(['REDIS_WAIT_REPLICAS', 'REDIS_WAIT_TIMEOUT_MS']);
    // A timeout of 0 would make WAIT block forever.
    expect(configErrorOf({ ...SECRETS, REDIS_WAIT_TIMEOUT_MS: '0' }).problems.map((p) => p.key)).toEqual([
      'REDIS_WAIT_TIMEOUT_MS',
    ]);
    expect(error.message).toContain('REDIS_WAIT_REPLICAS: invalid value "17" (replicas that must confirm');
    expect(error.message).toContain(
      'REDIS_WAIT_TIMEOUT_MS: invalid value "2001" (milliseconds WAIT may block',
    );
  });

  it('reads the OTLP protocols and refuses grpc at start-up, naming the variable', () => {
    const env = loadEnv(
      {
        ...SECRETS,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      },
      { envFile: false },
    );
    expect(env).toMatchObject({
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    });
    const error = configErrorOf({
      ...SECRETS,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
    });
    expect(error.problems.map((p) => p.key)).toEqual([
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    ]);
    expect(error.message).toContain(
      'OTEL_EXPORTER_OTLP_PROTOCOL: invalid value "grpc" (optional; the OTLP transport of traces, http/protobuf (the default) or http/json; grpc is not supported',
    );
  });

  it('never echoes the value of a secret', () => {
    const error = configErrorOf({ ...SECRETS, SLACK_BOT_TOKEN: 'xoxp-very-secret-user-token' });
    expect(error.message).toContain('SLACK_BOT_TOKEN: invalid value (a bot token starting with xoxb-)');
    expect(error.message).not.toContain('very-secret');
  });

  it.each(['1e3', ' 80', '0x50', '80.0', '65536', '-1'])('refuses PORT=%j', (port) => {
    expect(configErrorOf({ ...SECRETS, PORT: port }).problems.map((p) => p.key)).toEqual(['PORT']);
  });
});

describe('loadEnv: LOOPGATE_PREFIX must carry a Redis Cluster hash tag', () => {
  it.each(['loopgate', 'loopgate:', '{}loopgate', '{}{loopgate}', 'loop{gate', 'loop}gate{', 'acme:{lg}'])(
    'refuses %j',
    (prefix) => {
      const error = configErrorOf({ ...SECRETS, LOOPGATE_PREFIX: prefix });
      expect(error.problems.map((p) => p.key)).toEqual(['LOOPGATE_PREFIX']);
      expect(error.message).toContain('hash tag');
    },
  );

  it.each(['{loopgate}', 'acme-{lg}', '{lg}-staging', 'a{b}c{d}'])('accepts %j', (prefix) => {
    expect(loadEnv({ ...SECRETS, LOOPGATE_PREFIX: prefix }, { envFile: false }).LOOPGATE_PREFIX).toBe(prefix);
  });
});

describe('loadEnv: each process needs only its own secrets', () => {
  it('lets the worker start without SLACK_SIGNING_SECRET', () => {
    const env = loadEnv(
      { SLACK_BOT_TOKEN: 'xoxb-1', OPENAI_API_KEY: 'k' },
      { envFile: false, need: 'worker' },
    );
    expect(env.SLACK_SIGNING_SECRET).toBeUndefined();
    expectTypeOf(env.OPENAI_API_KEY).toEqualTypeOf<string>();
    expectTypeOf(env.SLACK_SIGNING_SECRET).toEqualTypeOf<string | undefined>();
  });

  it('lets the bot start without OPENAI_API_KEY', () => {
    const env = loadEnv(
      { SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' },
      { envFile: false, need: 'bot' },
    );
    expect(env.OPENAI_API_KEY).toBeUndefined();
    expectTypeOf(env.SLACK_SIGNING_SECRET).toEqualTypeOf<string>();
    expectTypeOf(env.OPENAI_API_KEY).toEqualTypeOf<string | undefined>();
  });

  it.each([
    ['bot', ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET']],
    ['worker', ['SLACK_BOT_TOKEN', 'OPENAI_API_KEY']],
    ['all', ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'OPENAI_API_KEY']],
  ] as const)('%s requires %j', (need, keys) => {
    expect(configErrorOf({}, need).problems.map((p) => p.key)).toEqual(keys);
  });

  it('defaults to needing everything', () => {
    expectTypeOf(loadEnv({ ...SECRETS }, { envFile: false }).SLACK_SIGNING_SECRET).toEqualTypeOf<string>();
    expect(configErrorOf({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' }).problems).toEqual([
      { key: 'OPENAI_API_KEY', problem: 'required (the API key of the OpenAI-compatible server)' },
    ]);
  });

  it('still checks the shape of a secret the process does not need', () => {
    const error = configErrorOf(
      { SLACK_BOT_TOKEN: 'xoxb-1', OPENAI_API_KEY: 'k', SLACK_APP_TOKEN: 'nope' },
      'worker',
    );
    expect(error.problems.map((p) => p.key)).toEqual(['SLACK_APP_TOKEN']);
  });
});

describe('loadEnv: the dotenv file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'loopgate-env-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  function writeEnvFile(text: string): string {
    const path = join(dir, '.env');
    writeFileSync(path, text);
    return path;
  }

  it('fills in unset keys but never overrides the real environment', () => {
    const envFile = writeEnvFile(
      [
        'SLACK_BOT_TOKEN=xoxb-from-file',
        'SLACK_SIGNING_SECRET=secret-from-file',
        'OPENAI_API_KEY=key-from-file',
        'OPENAI_MODEL=model-from-file',
        'PORT=4000',
        'PD_ROUTING_KEY=routing-from-file',
      ].join('\n'),
    );
    const source: Record<string, string | undefined> = { SLACK_BOT_TOKEN: 'xoxb-real', PORT: '5000' };
    const env = loadEnv(source, { envFile });
    expect(env.SLACK_BOT_TOKEN).toBe('xoxb-real');
    expect(env.PORT).toBe(5000);
    expect(env.SLACK_SIGNING_SECRET).toBe('secret-from-file');
    expect(env.OPENAI_MODEL).toBe('model-from-file');
    // Keys outside the schema reach the source too, for secrets the YAML config names.
    expect(source.PD_ROUTING_KEY).toBe('routing-from-file');
    expect(source.SLACK_BOT_TOKEN).toBe('xoxb-real');
  });

  it('takes the file value for a key the real environment sets to empty: empty counts as unset', () => {
    const envFile = writeEnvFile('SLACK_APP_TOKEN=xapp-from-file\nSLACK_BOT_TOKEN=xoxb-from-file\n');
    const source: Record<string, string | undefined> = {
      ...SECRETS,
      SLACK_APP_TOKEN: '',
      SLACK_BOT_TOKEN: '',
    };
    const env = loadEnv(source, { envFile });
    expect(env.SLACK_APP_TOKEN).toBe('xapp-from-file');
    expect(env.SLACK_BOT_TOKEN).toBe('xoxb-from-file');
  });

  it('treats a key empty in both the environment and the file as unset', () => {
    const envFile = writeEnvFile('SLACK_APP_TOKEN=\n');
    expect(loadEnv({ ...SECRETS, SLACK_APP_TOKEN: '' }, { envFile }).SLACK_APP_TOKEN).toBeUndefined();
  });

  it('reports a bad value that came from the file under its key', () => {
    const envFile = writeEnvFile('PORT=eighty\n');
    const error = (() => {
      try {
        loadEnv({ ...SECRETS }, { envFile });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('PORT: invalid value "eighty"');
  });

  it('is optional: a missing file is not an error', () => {
    expect(loadEnv({ ...SECRETS }, { envFile: join(dir, 'absent.env') }).PORT).toBe(3000);
  });

  it('names a path that exists but cannot be read as a file', () => {
    expect(() => loadEnv({ ...SECRETS }, { envFile: dir })).toThrow(
      expect.objectContaining({ code: 'config_error', problems: [expect.objectContaining({ key: dir })] }),
    );
  });
});
