import { afterAll, describe, expect, it } from 'vitest';
import { parseInstant } from '../../src/cli/time-range.js';
import { emptyWorkDir, runCli } from './cli-harness.js';

const work = emptyWorkDir();
afterAll(() => work.remove());
const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, env, work.dir);

describe('the loopgate command line', { timeout: 60_000 }, () => {
  it('lists the commands with --help (exit 0) and without a command (exit 2)', async () => {
    const [help, bare] = await Promise.all([cli(['--help']), cli([])]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: loopgate <command>/);
    for (const name of ['runs', 'trace', 'approvals', 'audit', 'check-config', 'policy', 'mcp']) {
      expect(help.stdout).toMatch(new RegExp(`\\n  ${name}\\s+\\S`));
    }
    expect(bare.code).toBe(2);
    expect(bare.stderr).toBe(help.stdout);
  });

  it('gives every command a --help that starts with its usage, without touching Redis', {
    timeout: 60_000,
  }, async () => {
    const names = ['runs', 'trace', 'approvals', 'audit', 'check-config', 'policy', 'mcp', 'model'];
    // A few processes at a time: each loads tsx and the sources, and a loaded machine is slow at that.
    const results: Awaited<ReturnType<typeof cli>>[] = [];
    for (let i = 0; i < names.length; i += 3) {
      results.push(
        ...(await Promise.all(
          names.slice(i, i + 3).map((n) => cli([n, '--help'], { REDIS_URL: 'redis://127.0.0.1:1' })),
        )),
      );
    }
    results.forEach((result, i) => {
      expect(result.code).toBe(0);
      expect(result.stdout.startsWith(`Usage: loopgate ${names[i]}`)).toBe(true);
    });
    const viaHelp = await cli(['help', 'audit']);
    expect(viaHelp.stdout).toBe(results[3]?.stdout);
  });

  it('refuses an unknown command or option with exit 2', async () => {
    const [command, option] = await Promise.all([cli(['frobnicate']), cli(['approvals', '--everything'])]);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain('unknown command "frobnicate"');
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("Unknown option '--everything'");
    expect(option.stderr).toContain('Usage: loopgate approvals');
  });

  it('names a bad REDIS_URL or LOOPGATE_PREFIX and exits 1', async () => {
    const result = await cli(['runs'], { REDIS_URL: 'http://127.0.0.1:6379', LOOPGATE_PREFIX: 'nohashtag' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      [
        'loopgate: invalid configuration in environment:',
        '  REDIS_URL: invalid value "http://127.0.0.1:6379" (a redis:// or rediss:// URL, default redis://127.0.0.1:6379)',
        '  LOOPGATE_PREFIX: invalid value "nohashtag" (a Redis key prefix containing a non-empty {hash tag} such as {loopgate}, without ":")',
        '',
      ].join('\n'),
    );
  });

  it('exits 1 with the server (password masked) when Redis cannot be reached', async () => {
    const result = await cli(['approvals'], { REDIS_URL: 'redis://:s3cret@127.0.0.1:1' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^loopgate approvals: cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1 /,
    );
    expect(result.stderr).not.toContain('s3cret');
  });
});

describe('times on the command line', () => {
  const now = Date.parse('2026-03-10T12:00:00Z');
  it('reads spans back from now', () => {
    expect(parseInstant('90s', now)).toBe(now - 90_000);
    expect(parseInstant('30m', now)).toBe(now - 1_800_000);
    expect(parseInstant('24h', now)).toBe(Date.parse('2026-03-09T12:00:00Z'));
    expect(parseInstant('7d', now)).toBe(Date.parse('2026-03-03T12:00:00Z'));
    expect(parseInstant('2w', now)).toBe(Date.parse('2026-02-24T12:00:00Z'));
  });
  it('reads ISO dates and date-times, UTC unless an offset is given', () => {
    expect(parseInstant('2026-03-01', now)).toBe(Date.parse('2026-03-01T00:00:00Z'));
    expect(parseInstant('2026-03-01T09:30', now)).toBe(Date.parse('2026-03-01T09:30:00Z'));
    expect(parseInstant('2026-03-01 09:30:15.250', now)).toBe(Date.parse('2026-03-01T09:30:15.250Z'));
    expect(parseInstant('2026-03-01T09:30:00+02:00', now)).toBe(Date.parse('2026-03-01T07:30:00Z'));
  });
  it('refuses anything else', () => {
    for (const text of ['', 'yesterday', '24', '24x', '2026', '2026-02-30x', '2026-13-01', 'h24']) {
      expect(parseInstant(text, now), text).toBeUndefined();
    }
  });
});
