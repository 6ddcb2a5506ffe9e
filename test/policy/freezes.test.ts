/**
 * Change freezes in the policy: windows read in their own time zone (Intl, daylight saving included),
 * weekly windows over the week's end, `when: { freeze }` in rules (any, none, by name), refusals naming
 * the key, and what `explainGate` says at a given moment. A property: a freeze condition judged at a moment
 * agrees with a brute-force reading of the windows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { explanationText } from '../../src/policy/describe.js';
import { activeFreezes, freezeInForce, wallClock } from '../../src/policy/freezes.js';
import { decideGate, explainGate } from '../../src/policy/gate.js';
import { ruleAtClick } from '../../src/policy/rule-at-click.js';

const FREEZES = `
freezes:
  year-end:
    timeZone: Europe/Berlin
    windows:
      - { start: "2026-12-20 00:00", end: "2027-01-04 08:00" }
  weekend:
    timeZone: America/New_York
    weekly:
      - { from: "fri 18:00", to: "mon 08:00" }
`;

function policyWith(yaml: string) {
  return parsePolicy(
    `
approvals:
  approvers: [U0MGR]
  expiresAfterMinutes: 60
tools:
  run_action:
    actions:
      restart_service:
        description: Restart one service
        params: { service: { enum: [payments, search] }, env: { enum: [staging, prod] } }
        http: { method: POST, url: "https://deploy.example/restart/{service}?env={env}" }
${yaml}`,
    { env: {} },
  );
}

function problems(yaml: string): string[] {
  try {
    policyWith(yaml);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.key}: ${p.problem}`);
  }
  throw new Error('expected the policy to be refused');
}

const RULES = `${FREEZES}
rules:
  run_action:
    - name: no prod in year-end
      when: { freeze: year-end, params.env: prod }
      outcome: deny
      reason: the year-end freeze is on
    - name: more eyes in a freeze
      when: { freeze: true }
      outcome: ask
      approvers: [U0LEAD1, U0LEAD2]
      quorum: 2
    - name: quiet times
      when: { freeze: false, params.env: staging }
      outcome: ask
      approvers: [U0DEV]
`;

const at = (iso: string) => Date.parse(iso);
const prod = { action: 'restart_service', params: { service: 'payments', env: 'prod' } };
const staging = { action: 'restart_service', params: { service: 'payments', env: 'staging' } };

describe('freeze windows', () => {
  const { year, weekend } = (() => {
    const f = parsePolicy(FREEZES, { env: {} }).freezes;
    return { year: f['year-end'], weekend: f.weekend };
  })();

  it('reads one-off windows in their own zone: Berlin midnight is 23:00 UTC the day before; the end is excluded', () => {
    if (!year) throw new Error('no year-end');
    expect(freezeInForce(year, at('2026-12-19T22:59:00Z'))).toBe(false);
    expect(freezeInForce(year, at('2026-12-19T23:00:00Z'))).toBe(true);
    expect(freezeInForce(year, at('2027-01-04T06:59:00Z'))).toBe(true);
    expect(freezeInForce(year, at('2027-01-04T07:00:00Z'))).toBe(false);
  });

  it('weekly windows run over the end of the week and follow daylight saving in their zone', () => {
    if (!weekend) throw new Error('no weekend');
    // New York is UTC-4 in summer: Friday 18:00 is 22:00 UTC.
    expect(freezeInForce(weekend, at('2026-07-10T21:59:00Z'))).toBe(false);
    expect(freezeInForce(weekend, at('2026-07-10T22:00:00Z'))).toBe(true);
    expect(freezeInForce(weekend, at('2026-07-12T12:00:00Z'))).toBe(true);
    expect(freezeInForce(weekend, at('2026-07-13T11:59:00Z'))).toBe(true);
    expect(freezeInForce(weekend, at('2026-07-13T12:00:00Z'))).toBe(false);
    // UTC-5 in winter: Friday 18:00 is 23:00 UTC.
    expect(freezeInForce(weekend, at('2026-12-11T22:30:00Z'))).toBe(false);
    expect(freezeInForce(weekend, at('2026-12-11T23:00:00Z'))).toBe(true);
    expect(freezeInForce(weekend, at('2026-12-14T13:00:00Z'))).toBe(false);
  });

  it('in the hour a "fall back" repeats, a wall time in that hour is in force both times', () => {
    const policy = policyWith(
      'freezes:\n  night: { timeZone: Europe/Berlin, windows: [{ start: "2026-10-25 02:00", end: "2026-10-25 03:00" }] }',
    );
    const night = policy.freezes.night;
    if (!night) throw new Error('no night');
    expect(freezeInForce(night, at('2026-10-24T23:59:00Z'))).toBe(false);
    expect(freezeInForce(night, at('2026-10-25T00:30:00Z'))).toBe(true); // 02:30 summer time
    expect(freezeInForce(night, at('2026-10-25T01:30:00Z'))).toBe(true); // 02:30 winter time
    expect(freezeInForce(night, at('2026-10-25T02:00:00Z'))).toBe(false);
  });

  it('lists the freezes in force in the order of the policy', () => {
    const policy = policyWith(FREEZES);
    // Saturday 2026-12-26: both.
    expect(activeFreezes(policy.freezes, at('2026-12-26T12:00:00Z'))).toEqual({
      inForce: ['year-end', 'weekend'],
      unknown: [],
    });
    expect(activeFreezes(policy.freezes, at('2026-12-16T12:00:00Z'))).toEqual({ inForce: [], unknown: [] });
  });

  it('agrees with a minute-by-minute reading of the wall clock (property)', () => {
    const policy = policyWith(FREEZES);
    const weekendFreeze = policy.freezes.weekend;
    if (!weekendFreeze) throw new Error('no weekend');
    fc.assert(
      fc.property(fc.integer({ min: at('2026-01-01T00:00:00Z'), max: at('2028-01-01T00:00:00Z') }), (now) => {
        const { text } = wallClock(now, 'America/New_York');
        const day = new Intl.DateTimeFormat('en-US', {
          timeZone: 'America/New_York',
          weekday: 'short',
        }).format(new Date(now));
        const hhmm = text.slice(11);
        const expected =
          (day === 'Fri' && hhmm >= '18:00') ||
          day === 'Sat' ||
          day === 'Sun' ||
          (day === 'Mon' && hhmm < '08:00');
        expect(freezeInForce(weekendFreeze, now)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});

describe('freezes in rules', () => {
  const policy = policyWith(RULES);

  it('a freeze denies prod, asks two leads for the rest, and outside freezes staging goes to its own people', () => {
    const inYearEnd = at('2026-12-22T12:00:00Z');
    expect(decideGate(policy, 'run_action', prod, inYearEnd)).toMatchObject({
      kind: 'deny',
      reason: 'the year-end freeze is on',
    });
    expect(decideGate(policy, 'run_action', staging, inYearEnd)).toMatchObject({
      kind: 'ask',
      quorum: 2,
      approvers: { users: ['U0LEAD1', 'U0LEAD2'] },
    });
    const weekendOnly = at('2026-07-11T12:00:00Z');
    expect(decideGate(policy, 'run_action', prod, weekendOnly)).toMatchObject({ kind: 'ask', quorum: 2 });
    const quiet = at('2026-07-08T12:00:00Z');
    expect(decideGate(policy, 'run_action', staging, quiet)).toMatchObject({
      kind: 'ask',
      quorum: 1,
      approvers: { users: ['U0DEV'] },
    });
    expect(decideGate(policy, 'run_action', prod, quiet)).toMatchObject({ kind: 'ask', rule: null });
  });

  it('without a moment a freeze condition cannot be decided: the first ask rule on it decides (fails closed)', () => {
    const decision = decideGate(policy, 'run_action', staging);
    expect(decision).toMatchObject({ kind: 'ask', quorum: 2 });
  });

  it('explains which freeze is in force and why a rule did not match', () => {
    const { tried, decision, freezes } = explainGate(
      policy,
      'run_action',
      staging,
      at('2026-12-22T12:00:00Z'),
    );
    expect(freezes).toEqual({ inForce: ['year-end'], unknown: [] });
    const text = explanationText('run_action', tried, decision);
    expect(text).toContain('rule 1 of run_action (no prod in year-end): no match: params.env is "staging"');
    expect(text).toContain('rule 2 of run_action (more eyes in a freeze): matches');
    const quiet = explainGate(policy, 'run_action', prod, at('2026-07-08T12:00:00Z'));
    expect(explanationText('run_action', quiet.tried, quiet.decision)).toContain(
      'no match: freeze: expected year-end is in force, no freeze is in force',
    );
  });

  it('the rule at a click: the same rule stands, a freeze that started denies or asks anew', () => {
    const asked = at('2026-12-18T12:00:00Z'); // a Friday noon in New York: no freeze yet
    expect(
      ruleAtClick(
        policy,
        { tool: 'run_action', args: staging, rule: 'rule 3 of run_action (quiet times)' },
        asked + 60_000,
      ),
    ).toEqual({
      kind: 'as_asked',
    });
    expect(ruleAtClick(policy, { tool: 'run_action', args: prod }, at('2026-12-20T12:00:00Z'))).toMatchObject(
      {
        kind: 'denied',
        reason: 'the year-end freeze is on',
        freezes: ['year-end', 'weekend'],
      },
    );
    expect(
      ruleAtClick(
        policy,
        { tool: 'run_action', args: staging, rule: 'rule 3 of run_action (quiet times)' },
        at('2026-12-18T23:30:00Z'),
      ),
    ).toMatchObject({ kind: 'asked_anew', ask: { quorum: 2 }, freezes: ['weekend'] });
  });

  it('a freeze added to a calendar while a card waits is judged against the rule the card was asked under', () => {
    const p = policyWith(`
freezes:
  launch: { calendar: { url: "https://calendar.example/freezes.ics" } }
rules:
  run_action:
    - name: two leads in the launch
      when: { freeze: launch }
      outcome: ask
      approvers: [U0LEAD1, U0LEAD2]
      quorum: 2
`);
    const asked = at('2026-12-18T12:00:00Z');
    const cell = p.freezes.launch?.calendar?.view;
    if (!cell) throw new Error('expected a calendar cell');
    cell.current = { kind: 'read', readAt: asked, intervals: [] };
    // Asked outside any freeze: the tool's default rule, one manager.
    expect(decideGate(p, 'run_action', staging, asked)).toMatchObject({ kind: 'ask', rule: null, quorum: 1 });
    // Then the calendar gains an event that covers the moment the card was asked and the click.
    const now = asked + 3_600_000;
    cell.current = {
      kind: 'read',
      readAt: now,
      intervals: [{ start: asked - 3_600_000, end: now + 3_600_000 }],
    };
    // Re-reading the past with today's calendar would say the card was asked under the launch rule and let
    // the manager alone approve; the card's own rule is what it was asked under.
    expect(ruleAtClick(p, { tool: 'run_action', args: staging }, now)).toMatchObject({
      kind: 'asked_anew',
      ask: { quorum: 2, rule: { label: 'rule 1 of run_action (two leads in the launch)' } },
      freezes: ['launch'],
    });
  });
});

describe('refusals name the key', () => {
  it.each([
    [
      'freezes:\n  x: { timeZone: Mars/Olympus, weekly: [{ from: "fri 18:00", to: "mon 08:00" }] }',
      'freezes.x.timeZone: expected an IANA time zone such as Europe/Berlin or UTC',
    ],
    [
      'freezes:\n  x: { windows: [{ start: "2026-02-30 00:00", end: "2026-03-02 00:00" }] }',
      'freezes.x.windows[0].start: not a real date and time',
    ],
    [
      'freezes:\n  x: { windows: [{ start: "2026-03-02 00:00", end: "2026-03-01 00:00" }] }',
      'freezes.x.windows[0].end: end must come after start',
    ],
    [
      'freezes:\n  x: { weekly: [{ from: "friday 18:00", to: "mon 08:00" }] }',
      'freezes.x.weekly[0].from: expected a day and time',
    ],
    ['freezes:\n  x: { timeZone: UTC }', 'freezes.x: expected windows, weekly or calendar'],
    [
      `${FREEZES}\nrules:\n  run_action:\n    - { when: { freeze: xmas }, outcome: deny, reason: no }`,
      'rules.run_action[0].when.freeze: unknown freeze xmas (defined: year-end, weekend)',
    ],
    [
      `${FREEZES}\nrules:\n  run_action:\n    - { when: { freeze: 3 }, outcome: deny, reason: no }`,
      'rules.run_action[0].when.freeze: expected boolean or string or array',
    ],
  ])('%s', (yaml, expected) => {
    expect(problems(yaml).join('\n')).toContain(expected);
  });
});
