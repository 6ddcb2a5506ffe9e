import { Writable } from 'node:stream';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createLogger, REDACTED, runLogger, secretRedactor } from '../../src/log/logger.js';
import type { Logger as EngineLogger } from '../../src/loop/tool-contract.js';

/** A logger writing into memory; `lines()` parses what was written, one JSON object per line. */
function memoryLogger(level: 'info' | 'debug' = 'info', service?: string, secrets?: string[]) {
  let text = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  const logger = createLogger({
    level,
    destination,
    service,
    ...(secrets ? { secrets: secretRedactor(secrets) } : {}),
  });
  const lines = (): Record<string, unknown>[] =>
    text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { logger, lines, raw: () => text };
}

describe('createLogger', () => {
  it('writes one JSON line per event with the base fields', () => {
    const { logger, lines, raw } = memoryLogger('info', 'loopgate-worker');
    logger.info({ step: 1 }, 'step started');
    logger.warn('slow model');
    expect(raw().split('\n')).toHaveLength(3); // two lines and the final newline
    const [first, second] = lines();
    expect(first).toMatchObject({
      level: 'info',
      service: 'loopgate-worker',
      pid: process.pid,
      step: 1,
      msg: 'step started',
    });
    expect(first?.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(typeof first?.hostname).toBe('string');
    expect(second).toMatchObject({ level: 'warn', msg: 'slow model' });
  });

  it('names the service loopgate by default', () => {
    const { logger, lines } = memoryLogger();
    logger.info('hello');
    expect(lines()[0]?.service).toBe('loopgate');
  });

  it('writes nothing below its level', () => {
    const { logger, lines } = memoryLogger('info');
    logger.debug('hidden');
    logger.info('shown');
    expect(lines().map((l) => l.msg)).toEqual(['shown']);
  });

  it('serialises errors with their message and stack', () => {
    const { logger, lines } = memoryLogger();
    logger.error({ err: new Error('boom') }, 'step failed');
    expect(lines()[0]?.err).toMatchObject({ type: 'Error', message: 'boom', stack: expect.any(String) });
  });

  it('can be handed to the engine as its Logger port', () => {
    expectTypeOf(createLogger({ level: 'info' })).toExtend<EngineLogger>();
  });
});

describe('createLogger: redaction', () => {
  const secrets = {
    token: 'S-token',
    apiKey: 'S-apiKey',
    api_key: 'S-api_key',
    routingKey: 'S-routingKey',
    signingSecret: 'S-signingSecret',
    password: 'S-password',
  };

  it('censors secrets at the top level', () => {
    const { logger, lines, raw } = memoryLogger();
    logger.info({ ...secrets, user: 'U1' }, 'login');
    const line = lines()[0];
    for (const key of Object.keys(secrets)) expect(line?.[key]).toBe(REDACTED);
    expect(line?.user).toBe('U1');
    expect(raw()).not.toMatch(/S-/);
  });

  it('censors the secrets of an env object', () => {
    const { logger, lines, raw } = memoryLogger();
    logger.info({
      env: {
        SLACK_BOT_TOKEN: 'S-bot',
        SLACK_SIGNING_SECRET: 'S-signing',
        SLACK_APP_TOKEN: 'S-app',
        OPENAI_API_KEY: 'S-openai',
        PD_ROUTING_KEY: 'S-pd',
        OPENAI_MODEL: 'gpt-4.1-mini',
        PORT: 3000,
      },
    });
    expect(lines()[0]?.env).toEqual({
      SLACK_BOT_TOKEN: REDACTED,
      SLACK_SIGNING_SECRET: REDACTED,
      SLACK_APP_TOKEN: REDACTED,
      OPENAI_API_KEY: REDACTED,
      PD_ROUTING_KEY: REDACTED,
      OPENAI_MODEL: 'gpt-4.1-mini',
      PORT: 3000,
    });
    expect(raw()).not.toMatch(/S-/);
  });

  it('censors authorization headers and cookies in either spelling, including cookie arrays', () => {
    const { logger, lines, raw } = memoryLogger();
    logger.info({
      req: {
        method: 'POST',
        headers: {
          authorization: 'Bearer S-1',
          cookie: 'session=S-2',
          'x-api-key': 'S-3',
          'content-type': 'application/json',
        },
      },
      res: { headers: { 'Set-Cookie': ['a=S-4', 'b=S-5'], 'Proxy-Authorization': 'Basic S-6' } },
    });
    const line = lines()[0];
    expect(line?.req).toEqual({
      method: 'POST',
      headers: {
        authorization: REDACTED,
        cookie: REDACTED,
        'x-api-key': REDACTED,
        'content-type': 'application/json',
      },
    });
    expect(line?.res).toEqual({ headers: { 'Set-Cookie': REDACTED, 'Proxy-Authorization': REDACTED } });
    expect(raw()).not.toMatch(/S-/);
  });

  it('censors what an SDK error carries about its request', () => {
    const { logger, lines, raw } = memoryLogger();
    const error = Object.assign(new Error('401 Unauthorized'), {
      status: 401,
      config: { url: 'https://api.example/v1', headers: { Authorization: 'Bearer S-sdk' } },
    });
    logger.error({ err: error }, 'model call failed');
    expect(lines()[0]?.err).toMatchObject({
      message: '401 Unauthorized',
      status: 401,
      config: { url: 'https://api.example/v1', headers: { Authorization: REDACTED } },
    });
    expect(raw()).not.toMatch(/S-/);
  });

  it('censors secrets nested deeper than any fixed path list would reach, and whole secret objects', () => {
    const { logger, lines, raw } = memoryLogger();
    logger.info({
      a: { b: { c: { d: { e: { clientSecret: 'S-deep' } } } } },
      tools: [{ token: { v: 'S-obj' } }],
    });
    expect(lines()[0]).toMatchObject({
      a: { b: { c: { d: { e: { clientSecret: REDACTED } } } } },
      tools: [{ token: REDACTED }],
    });
    expect(raw()).not.toMatch(/S-/);
  });

  it('censors secrets in child bindings', () => {
    const { logger, lines, raw } = memoryLogger();
    logger.child({ botToken: 'S-child', team: 'T1' }).info('from child');
    expect(lines()[0]).toMatchObject({ botToken: REDACTED, team: 'T1', msg: 'from child' });
    expect(raw()).not.toMatch(/S-/);
  });

  it('keeps fields that only look similar: counters, idempotency keys, messages', () => {
    const { logger, lines } = memoryLogger();
    logger.info(
      { maxTokens: 200_000, usage: { promptTokens: 12, totalTokens: 30 }, idempotencyKey: 'run1:call1' },
      'the "token" was refreshed',
    );
    expect(lines()[0]).toMatchObject({
      maxTokens: 200_000,
      usage: { promptTokens: 12, totalTokens: 30 },
      idempotencyKey: 'run1:call1',
      msg: 'the "token" was refreshed',
    });
  });
});

describe('createLogger with the configured secret values', () => {
  const TOKEN = 'xoxb-999-888-zyxwvutsrq';
  const ROUTING = 'R0UT1NG"KEY\\2024';

  it('censors a secret value under any key, in messages, errors and stacks, at any depth', () => {
    const { logger, lines, raw } = memoryLogger('info', undefined, [TOKEN, ROUTING]);
    const err = new Error(`Slack refused ${TOKEN}`);
    logger.warn({ note: `sent ${TOKEN} twice`, deep: { list: [ROUTING] }, err }, `calling with ${TOKEN}`);
    expect(raw()).not.toContain('xoxb-999');
    expect(raw()).not.toContain('R0UT1NG');
    const [line] = lines();
    expect(line).toMatchObject({
      note: `sent ${REDACTED} twice`,
      deep: { list: [REDACTED] },
      msg: `calling with ${REDACTED}`,
      err: {
        message: `Slack refused ${REDACTED}`,
        stack: expect.stringMatching(/^Error: Slack refused \[redacted\]\n/),
      },
    });
  });

  it('keeps values shorter than 8 characters visible', () => {
    const { logger, lines } = memoryLogger('info', undefined, [TOKEN, 'prod']);
    logger.info({ env: 'prod', n: 12345678 }, 'deploying to prod');
    expect(lines()[0]).toMatchObject({ env: 'prod', n: 12345678, msg: 'deploying to prod' });
  });
});

describe('runLogger', () => {
  it('adds runId and jobId to every line', () => {
    const { logger, lines } = memoryLogger();
    const log = runLogger(logger, { runId: 'run-1', jobId: 'job-7' });
    log.info({ step: 2 }, 'step started');
    log.child({ tool: 'http_get' }).warn('tool slow');
    expect(lines()).toEqual([
      expect.objectContaining({ runId: 'run-1', jobId: 'job-7', step: 2, msg: 'step started' }),
      expect.objectContaining({ runId: 'run-1', jobId: 'job-7', tool: 'http_get', msg: 'tool slow' }),
    ]);
  });

  it('omits jobId when there is no job', () => {
    const { logger, lines } = memoryLogger();
    runLogger(logger, { runId: 'run-2' }).info('decided');
    const line = lines()[0];
    expect(line?.runId).toBe('run-2');
    expect(line).not.toHaveProperty('jobId');
  });

  it('leaves the parent logger without the run fields', () => {
    const { logger, lines } = memoryLogger();
    runLogger(logger, { runId: 'run-3', jobId: 'job-1' });
    logger.info('parent');
    expect(lines()[0]).not.toHaveProperty('runId');
  });
});
