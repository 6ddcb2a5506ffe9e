/**
 * `npm run chat` driven through stdin, with the fake OpenAI server as the configured model
 * (OPENAI_BASE_URL) and a policy with one gated action: the requester's own click is refused, `/as`
 * switches to the approver, whose click runs the action once, and the answer and status lines show.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../fakes/openai-server.js';
import { type Program, spawnProgram } from './spawn-program.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Proposes the restart when asked; answers from the action's result once it has one. */
function restartThenAnswer(request: RecordedRequest) {
  const last = request.body.messages.at(-1);
  if (last?.role === 'tool') {
    const result = JSON.parse(String(last.content)) as { ok: boolean };
    return {
      content: result.ok ? 'Done: payments answered the restart with HTTP 200.' : 'The restart did not run.',
    };
  }
  return {
    content: 'A restart clears the stuck pool.',
    toolCalls: [{ name: 'run_action', arguments: JSON.stringify({ action: 'restart', params: {} }) }],
  };
}

function policy(serviceUrl: string): string {
  return [
    'approvals:',
    '  approvers: [U0MGR]',
    'tools:',
    '  run_action:',
    '    actions:',
    '      restart:',
    '        description: Restart payments',
    `        http: { method: POST, url: "${serviceUrl}/restart" }`,
    '',
  ].join('\n');
}

let dir: string | undefined;
let chat: Program | undefined;
let openai: FakeOpenAI | undefined;
let service: HttpFixture | undefined;
afterEach(async () => {
  await chat?.stop();
  await Promise.allSettled([openai?.close(), service?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
  chat = openai = service = dir = undefined;
});

describe('npm run chat', { timeout: 180_000 }, () => {
  it('plays a thread against the real processes: status, a card refused for the requester, approved as U0MGR, the answer', async () => {
    dir = mkdtempSync(join(tmpdir(), 'loopgate-chat-test-'));
    service = await startHttpFixture((_req, res) => reply(res, 200, 'application/json', '{"ok":true}'));
    openai = await startFakeOpenAI([restartThenAnswer, restartThenAnswer]);
    const policyPath = join(dir, 'policy.yaml');
    writeFileSync(policyPath, policy(service.url));
    chat = spawnProgram(
      'chat',
      { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: openai.url, LOOPGATE_CONFIG: policyPath, REDIS_URL },
      dir,
    );
    const c = chat;
    await c.waitFor('U0YOU > ', 100_000);
    const prefix = /keys under (\{[^}]+\})/.exec(c.stdout())?.[1];
    expect(prefix).toMatch(/^\{loopgate-chat-[0-9a-f]+\}$/);

    c.type('payments is stuck, restart it please');
    await c.waitFor('decide the card as U0YOU', 20_000);
    expect(c.stdout()).toContain('⏳ Thinking…');
    expect(c.stdout()).toContain('■ ✋ Approval needed: run_action');
    expect(c.stdout()).toContain('A restart clears the stuck pool.');

    let mark = c.stdout().length;
    c.type('a');
    await c.waitFor('(only visible to you)', 10_000, mark);
    await c.waitFor('decide the card as U0YOU', 10_000, mark);
    expect(c.stdout().slice(mark)).toContain('You may not approve `run_action` calls');
    expect(service.requests).toHaveLength(0);

    c.type('/as U0MGR');
    await c.waitFor('decide the card as U0MGR', 10_000, mark);
    mark = c.stdout().length;
    c.type('a');
    await c.waitFor('Done: payments answered the restart with HTTP 200.', 20_000, mark);
    // The bot redraws the card while the worker resumes the run: the redraw may be shown after the answer.
    await c.waitFor('✅ *Approved* by @U0MGR', 10_000, mark);
    expect(service.requests.filter((r) => r.method === 'POST')).toHaveLength(1);

    c.type('/quit');
    expect(await c.exited).toBe(0);
    const redis = new Redis(REDIS_URL);
    try {
      const bare = prefix?.slice(1, -1);
      expect(await redis.keys(`${bare}:*`)).toEqual([]);
      expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it("without a model key plays the demo's scripted model: a restart card approved as U0MGR, the answer with feedback buttons", async () => {
    dir = mkdtempSync(join(tmpdir(), 'loopgate-chat-test-'));
    chat = spawnProgram('chat', { REDIS_URL }, dir);
    const c = chat;
    await c.waitFor('U0YOU > ', 100_000);
    expect(c.stdout()).toContain(
      "No OPENAI_API_KEY (in the environment or .env): playing the demo's scripted on-call model",
    );
    c.type("payments is slow, what's going on?");
    await c.waitFor('decide the card as U0YOU', 30_000);
    c.type('/as U0MGR');
    await c.waitFor('decide the card as U0MGR', 10_000);
    const mark = c.stdout().length;
    c.type('a');
    await c.waitFor('✅ *Approved* by @U0MGR', 30_000, mark);
    await c.waitFor('[ 👍 ] [ 👎 ]', 30_000, mark);
    expect(c.stdout()).not.toContain('(context_actions block)');
    c.type('/quit');
    expect(await c.exited).toBe(0);
  });

  it("OPENAI_MODEL wins over the policy's model.name, and a card approved by a user group is approved in chat", async () => {
    dir = mkdtempSync(join(tmpdir(), 'loopgate-chat-test-'));
    service = await startHttpFixture((_req, res) => reply(res, 200, 'application/json', '{"ok":true}'));
    openai = await startFakeOpenAI([restartThenAnswer, restartThenAnswer]);
    const policyPath = join(dir, 'policy.yaml');
    writeFileSync(
      policyPath,
      `model: { name: gpt-4.1-mini }\n${policy(service.url).replace('[U0MGR]', '[S0SRE]')}`,
    );
    chat = spawnProgram(
      'chat',
      {
        OPENAI_API_KEY: 'local',
        OPENAI_BASE_URL: openai.url,
        OPENAI_MODEL: 'local-model',
        LOOPGATE_CONFIG: policyPath,
        REDIS_URL,
      },
      dir,
    );
    const c = chat;
    await c.waitFor('U0YOU > ', 100_000);
    expect(c.stdout()).toContain('user group S0SRE (members U0MEMBER1, U0MEMBER2): stand-ins');
    c.type('/group S0SRE U0LEAD,U0OTHER');
    await c.waitFor('(user group S0SRE (members U0LEAD, U0OTHER); /as one of them to decide its cards)');
    c.type('payments is stuck, restart it please');
    await c.waitFor('decide the card as U0YOU', 20_000);
    expect(c.stdout()).toContain(
      '(this card waits on user group S0SRE (members U0LEAD, U0OTHER): /as one of them',
    );
    expect(openai.requests[0]?.body.model).toBe('local-model');
    c.type('/as U0LEAD');
    await c.waitFor('decide the card as U0LEAD', 10_000);
    const mark = c.stdout().length;
    c.type('a');
    await c.waitFor('Done: payments answered the restart with HTTP 200.', 20_000, mark);
    expect(c.stdout().slice(mark)).not.toContain('could not check your user group membership');
    expect(service.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    c.type('/quit');
    expect(await c.exited).toBe(0);
    // The chat's copy of the policy (with the model name) is gone with it.
    expect(readdirSync(dir).filter((f) => f.includes('.chat-'))).toEqual([]);
  });
});
