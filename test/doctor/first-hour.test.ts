/**
 * The new user's first hour, as processes: `loopgate init` with flags in an empty directory,
 * `check-config` green, `loopgate doctor` green against the fake Slack and the fake model, then red with
 * one precise line for each thing a team gets wrong first: a wrong token, a missing scope, a channel the
 * bot is not in, an unknown user group, a model server that rejects the tool schemas, Redis down.
 */
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyWorkDir, runCli } from '../cli/cli-harness.js';
import { type FakeOpenAI, type FakeStep, startFakeOpenAI } from '../fakes/openai-server.js';
import { type FakeSlack, MANIFEST_SCOPES, startFakeSlack } from '../fakes/slack-api-server.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const APP_TOKEN = 'xapp-1-A0APP0001-1-fake';
const REJECTION =
  "Invalid schema for function 'post_message': In context=('properties', 'channel'), 'enum' is not permitted.";

const work = emptyWorkDir();
let slack: FakeSlack;
let model: FakeOpenAI;
let picky: FakeOpenAI;

const answers: FakeStep = () => ({ toolCalls: [{ name: 'current_time', arguments: '{}' }] });
const rejectsTools: FakeStep = (request) =>
  request.body.tools
    ? {
        status: 400,
        body: { error: { message: REJECTION, type: 'invalid_request_error', param: 'tools', code: null } },
      }
    : { content: 'ok' };

beforeAll(async () => {
  slack = await startFakeSlack({
    strictChannels: true,
    strictUsers: true,
    users: { U0ALICE: { name: 'alice' } },
    groups: { S0SRE: ['U0ALICE'] },
    channelMembers: { C0OPS: ['UBOT0001', 'U0ALICE'] },
    socketMode: { appToken: APP_TOKEN, url: () => 'ws://127.0.0.1:9/socket' },
  });
  model = await startFakeOpenAI(Array.from({ length: 20 }, () => answers));
  picky = await startFakeOpenAI(Array.from({ length: 5 }, () => rejectsTools));
});

afterAll(async () => {
  await Promise.all([slack?.close(), model?.close(), picky?.close()]);
  work.remove();
});

/** What the shell holds besides .env: where the fakes are, and no port the test machine may use. */
const shellEnv = (extra: Record<string, string> = {}) => ({
  SLACK_API_URL: slack.apiUrl,
  REDIS_URL,
  METRICS_PORT: '0',
  BOT_METRICS_PORT: '0',
  ...extra,
});

const doctor = (extra: Record<string, string> = {}) => runCli(['doctor'], shellEnv(extra), work.dir);
const failLines = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('FAIL'));

describe('the first hour: init, check-config, doctor', { timeout: 120_000 }, () => {
  it('init with flags writes .env and loopgate.yaml that check-config and doctor find green', async () => {
    const init = await runCli(
      [
        'init',
        '--no-input',
        '--bot-token',
        slack.token,
        '--signing-secret',
        'fake-signing-secret',
        '--app-token',
        APP_TOKEN,
        '--api-key',
        'sk-fake',
        '--base-url',
        model.url,
        '--model',
        'local-model',
        '--approvers',
        'U0ALICE,S0SRE',
        '--channels',
        'C0OPS',
      ],
      {},
      work.dir,
    );
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('Socket Mode');
    const env = readFileSync(join(work.dir, '.env'), 'utf8');
    expect(env).toContain(`SLACK_APP_TOKEN=${APP_TOKEN}`);
    expect(env).toContain('OPENAI_MODEL=local-model');
    expect(statSync(join(work.dir, '.env')).mode & 0o077).toBe(0);
    const policy = readFileSync(join(work.dir, 'loopgate.yaml'), 'utf8');
    expect(policy).not.toContain('page_oncall');

    const again = await runCli(['init', '--no-input'], {}, work.dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('.env exists; pass --force to overwrite it');

    const check = await runCli(['check-config'], {}, work.dir);
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/^OK/);

    const green = await doctor();
    expect(failLines(green.stdout)).toEqual([]);
    expect(green.code).toBe(0);
    for (const name of [
      'environment',
      'policy',
      'slack auth',
      'slack scopes',
      'slack socket mode',
      'channel C0OPS',
      'approver U0ALICE',
      'approver group S0SRE',
      'model local-model',
      'redis',
      'redis maxmemory-policy',
    ]) {
      expect(green.stdout).toMatch(new RegExp(`^ok +${name} `, 'm'));
    }
    // The model was offered the policy's real tools, under the model name init wrote.
    const request = model.requests.at(-1);
    expect(request?.body.model).toBe('local-model');
    expect(request?.body.tools?.map((t) => t.function.name).sort()).toEqual(['current_time', 'post_message']);

    const asJson = await runCli(['doctor', '--json'], shellEnv(), work.dir);
    const parsed = JSON.parse(asJson.stdout) as { ok: boolean; checks: { name: string; status: string }[] };
    expect(parsed.ok).toBe(true);
    expect(parsed.checks.find((c) => c.name === 'slack auth')?.status).toBe('ok');
  });

  it('names SLACK_BOT_TOKEN when Slack refuses the token', async () => {
    const red = await doctor({ SLACK_BOT_TOKEN: 'xoxb-not-the-token' });
    expect(red.code).toBe(1);
    expect(failLines(red.stdout)).toEqual([
      expect.stringMatching(
        /^FAIL slack auth +Slack refused SLACK_BOT_TOKEN \(invalid_auth\): copy the Bot User OAuth Token/,
      ),
    ]);
  });

  it('names the missing scope and the feature that needs it', async () => {
    slack.setScopes(MANIFEST_SCOPES.filter((s) => s !== 'usergroups:read'));
    try {
      const red = await doctor();
      expect(red.code).toBe(1);
      expect(failLines(red.stdout)).toEqual([
        expect.stringMatching(
          /^FAIL slack scopes +missing usergroups:read \(approver user groups \(S0SRE\)\): add them to the app's bot scopes/,
        ),
        expect.stringMatching(/^FAIL approver group S0SRE +missing_scope: needs usergroups:read/),
      ]);
    } finally {
      slack.setScopes(MANIFEST_SCOPES);
    }
  });

  it('says the bot must be invited to a channel it is not in', async () => {
    slack.setChannelMembers('C0OPS', ['U0ALICE']);
    try {
      const red = await doctor();
      expect(red.code).toBe(1);
      expect(failLines(red.stdout)).toEqual([
        expect.stringMatching(
          /^FAIL channel C0OPS +the bot is not a member of #c0ops, so post_message cannot write there: type \/invite @<bot name> in it$/,
        ),
      ]);
    } finally {
      slack.setChannelMembers('C0OPS', ['UBOT0001', 'U0ALICE']);
    }
  });

  it('reports a user group the workspace does not have', async () => {
    const path = join(work.dir, 'loopgate.yaml');
    const original = readFileSync(path, 'utf8');
    appendFileSync(
      path,
      'rules:\n  post_message:\n    - name: leads\n      outcome: ask\n      approvers: [S0NOSUCH]\n',
    );
    const check = await runCli(['check-config'], {}, work.dir);
    try {
      expect(check.code, check.stderr).toBe(0);
      const red = await doctor();
      expect(red.code).toBe(1);
      expect(failLines(red.stdout)).toEqual([
        expect.stringMatching(
          /^FAIL approver group S0NOSUCH +no_such_subteam: no such user group in this workspace/,
        ),
      ]);
    } finally {
      writeFileSync(path, original);
    }
  });

  it("quotes a model server's own words when it rejects the tool schemas", async () => {
    const red = await doctor({ OPENAI_BASE_URL: picky.url });
    expect(red.code).toBe(1);
    const line = failLines(red.stdout);
    expect(line).toHaveLength(1);
    expect(line[0]).toMatch(/^FAIL model local-model +/);
    expect(line[0]?.replace(/^FAIL model local-model +/, '')).toBe(
      `OPENAI_BASE_URL ${picky.url} rejected a request with the policy's 2 tools (HTTP 400): ${REJECTION}`,
    );
  });

  it('names REDIS_URL when Redis is down', async () => {
    const red = await doctor({ REDIS_URL: 'redis://127.0.0.1:1' });
    expect(red.code).toBe(1);
    expect(failLines(red.stdout)).toEqual([
      expect.stringMatching(
        /^FAIL redis +cannot connect to Redis at redis:\/\/127\.0\.0\.1:1\/? \(.*\); check REDIS_URL$/,
      ),
    ]);
  });
});
