import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parsePolicy } from '../../src/config/policy.js';
import { defineTool } from '../../src/loop/define-tool.js';
import { prepareCall } from '../../src/loop/prepare.js';
import { createRun } from '../../src/loop/state.js';
import { channelScope, withChannelApprovers } from '../../src/policy/channel-rules.js';
import type { GateDecision } from '../../src/policy/gate.js';
import { createChannelFacts } from '../../src/slack/channel-facts.js';
import { channelTools, threadChannelFacts } from '../../src/worker/channel-scope.js';
import { storeFixture } from '../store/redis-fixture.js';

const fx = storeFixture();
afterAll(() => fx.cleanup());

const RULES = parsePolicy(
  `channels:
  rules:
    - name: incidents
      match: { name: "incident-*" }
      approvers: [U0ONCALL]
    - name: dms
      match: { kind: dm }
      readOnly: true
`,
  { env: {} },
).channels.rules;

const info = (name: string, extra: Record<string, boolean> = {}) => ({
  ok: true,
  channel: { id: 'C0X', name, is_channel: true, is_private: false, ...extra },
});

describe('channel facts from conversations.info', () => {
  it('reads the kind as Slack gives it and caches an answer for the period, not a failure', async () => {
    let now = 0;
    const answers: unknown[] = [
      Promise.reject(new Error('channel_not_found')),
      info('incident-1'),
      info('general'),
    ];
    let asked = 0;
    const factsOf = createChannelFacts({
      info: async () => answers[asked++],
      clock: { now: () => now },
      ttlMs: 1_000,
    });
    expect(await factsOf('C0X')).toEqual({ id: 'C0X', kind: null });
    expect(await factsOf('C0X')).toEqual({ id: 'C0X', name: 'incident-1', kind: 'public' });
    now = 999;
    expect((await factsOf('C0X')).name).toBe('incident-1');
    now = 1_000;
    expect((await factsOf('C0X')).name).toBe('general');
    expect(asked).toBe(3);
  });

  it('tells private channels, group DMs and DMs apart', async () => {
    const of = (reply: unknown) =>
      createChannelFacts({ info: async () => reply, clock: { now: () => 0 } })('C0X');
    expect((await of(info('ops', { is_private: true }))).kind).toBe('private');
    expect((await of(info('mpdm-a--b', { is_mpim: true, is_private: true }))).kind).toBe('mpim');
    expect(await of({ ok: true, channel: { id: 'D0X', is_im: true } })).toEqual({ id: 'C0X', kind: 'dm' });
  });
});

describe("a thread's recorded channel facts", () => {
  const thread = { teamId: 'T0', channelId: 'C0REC', threadTs: '1.1' };

  it('are recorded by the first run that learns them and used by every later one; a failure is not', async () => {
    const failing = { rules: RULES, factsOf: async (id: string) => ({ id, kind: null }) };
    expect(await threadChannelFacts(fx.store, failing, thread)).toEqual({ id: 'C0REC', kind: null });
    const first = {
      rules: RULES,
      factsOf: async (id: string) => ({ id, name: 'incident-9', kind: 'public' as const }),
    };
    const renamed = {
      rules: RULES,
      factsOf: async (id: string) => ({ id, name: 'general', kind: 'public' as const }),
    };
    expect((await threadChannelFacts(fx.store, first, thread)).name).toBe('incident-9');
    expect((await threadChannelFacts(fx.store, renamed, thread)).name).toBe('incident-9');
    const ttl = await fx.redis.ttl(fx.store.context.keys.thread('T0', 'C0REC', '1.1').channel);
    expect(ttl).toBeGreaterThan(3_500);
  });
});

describe("the run's tools in a channel", () => {
  const tool = (name: string, effect: 'read' | 'write') =>
    defineTool({
      name,
      description: name,
      effect,
      parameters: z.strictObject({}),
      async execute() {
        return 'ok';
      },
    });
  const tools = new Map([
    ['http_get', tool('http_get', 'read')],
    ['http_request', tool('http_request', 'write')],
  ]);
  const state = createRun({
    runId: 'r',
    requester: { userId: 'U0' },
    systemPrompt: '',
    question: '',
    now: 0,
  });

  it('withholds what the channel does not allow, and a call to it reads channel_not_allowed', () => {
    const dm = channelTools(tools, channelScope(RULES, { id: 'D0A', kind: 'dm' }));
    expect([...dm.tools.keys()]).toEqual(['http_get']);
    const call = { id: 'c1', name: 'http_request', arguments: '{}' };
    const refused = prepareCall(call, dm.tools, state, dm.withheld);
    expect(refused).toMatchObject({
      kind: 'error',
      result: { ok: false, error: { code: 'channel_not_allowed' } },
    });
    // Without the channel's reason the same call is an unknown tool, as before.
    expect(prepareCall(call, dm.tools, state)).toMatchObject({ result: { error: { code: 'unknown_tool' } } });
    expect(channelTools(tools, null).tools).toBe(tools);
  });

  it("channel approvers replace an ask's, never an allow or a deny", () => {
    const scope = channelScope(RULES, { id: 'C0I', name: 'incident-3', kind: 'public' });
    const ask = {
      kind: 'ask',
      approvers: { users: ['U0LEAD'], groups: [] },
      quorum: 2,
    } as unknown as GateDecision;
    expect(withChannelApprovers(ask, scope)).toMatchObject({ approvers: { users: ['U0ONCALL'] }, quorum: 2 });
    const allow = { kind: 'allow', rule: { index: 0, label: 'rule 1 of x' } } as GateDecision;
    expect(withChannelApprovers(allow, scope)).toBe(allow);
  });
});
