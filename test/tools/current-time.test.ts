import { describe, expect, it } from 'vitest';
import { createCurrentTime } from '../../src/tools/current-time.js';
import { run, toolContext } from './tool-harness.js';

const tool = createCurrentTime({ clock: { now: () => Date.parse('2026-07-14T21:30:05Z') } });

describe('current_time', () => {
  it("answers in the requester's time zone", async () => {
    const out = await run(tool, {}, toolContext({ requester: { userId: 'U1', timeZone: 'Europe/Paris' } }));
    expect(out).toMatchObject({
      timeZone: 'Europe/Paris',
      local: '2026-07-14T23:30:05+02:00',
      utc: '2026-07-14T21:30:05.000Z',
    });
    const human = (out as { human: string }).human;
    expect(human).toContain('14 July 2026');
    expect(human).toContain('23:30:05');
  });

  it('defaults to UTC, and to UTC when the requester zone is unknown', async () => {
    expect(await run(tool, {})).toMatchObject({ timeZone: 'UTC', local: '2026-07-14T21:30:05+00:00' });
    const odd = toolContext({ requester: { userId: 'U1', timeZone: 'Mars/Olympus' } });
    expect(await run(tool, {}, odd)).toMatchObject({ timeZone: 'UTC' });
  });

  it('converts to a zone the model names, with half-hour offsets and date changes', async () => {
    expect(await run(tool, { timeZone: 'Asia/Kolkata' })).toMatchObject({
      local: '2026-07-15T03:00:05+05:30',
    });
    expect(await run(tool, { timeZone: 'America/Los_Angeles' })).toMatchObject({
      local: '2026-07-14T14:30:05-07:00',
    });
  });

  it('refuses an unknown zone named by the model', async () => {
    await expect(run(tool, { timeZone: 'Nowhere/City' })).rejects.toMatchObject({
      code: 'unknown_time_zone',
    });
  });
});
