import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReadRunbook } from '../../src/tools/read-runbook.js';
import { headings } from '../../src/tools/runbooks/markdown-sections.js';
import { stem } from '../../src/tools/runbooks/runbook-search.js';
import { runbookSettings } from '../../src/tools/runbooks/runbook-settings.js';
import { createSearchRunbooks } from '../../src/tools/search-runbooks.js';
import { run, text } from './tool-harness.js';

const PAYMENTS = `# Payments high latency

Alert: PaymentsLatencyHigh fires when p99 latency of the payments API exceeds 800 ms.

## Symptoms
- Checkout is slow; latency dashboards are red.

## Diagnosis
Look at the payments latency panel first.

### Check the database
Run \`SELECT * FROM pg_stat_activity\` and look for long queries.

\`\`\`
# not a heading: inside a code block
\`\`\`

## Mitigation
Restart the payments service with run_action restart_service.
Restarting clears stuck connections.
`;

const DISK = `# Disk full on a node

When a disk fills up, writes fail and latency may rise.

## Clean up
Delete old logs under /var/log.
`;

const ROLLBACK = `# Rolling back a deploy

## When to roll back
If a deploy breaks payments or search, roll back first and debug later.
`;

let root: string;
let dir: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'loopgate-runbooks-'));
  dir = join(root, 'runbooks');
  await mkdir(join(dir, 'deploys'), { recursive: true });
  await writeFile(join(dir, 'payments-latency.md'), PAYMENTS);
  await writeFile(join(dir, 'disk-full.md'), DISK);
  await writeFile(join(dir, 'deploys', 'rollback.md'), ROLLBACK);
  await writeFile(join(dir, 'long.md'), Array.from({ length: 450 }, (_, i) => `step ${i + 1}`).join('\n'));
  await writeFile(join(dir, 'notes.txt'), 'payments latency payments latency');
  await writeFile(join(root, 'secret.md'), '# Secret\npassword: hunter2\n');
  await symlink(join(root, 'secret.md'), join(dir, 'leak.md'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const settings = () => runbookSettings.parse({ dir });
const search = (query: string) => run(createSearchRunbooks(settings()), { query }).then(text);
const read = (args: Record<string, unknown>) => run(createReadRunbook(settings()), args).then(text);

describe('search_runbooks', () => {
  it('ranks the section about the query first, with file:line snippets', async () => {
    const out = await search('payments latency');
    expect(out.split('\n')[0]).toBe('1. payments-latency.md:1 — Payments high latency (lines 1-4)');
    expect(out).toContain('   payments-latency.md:3: Alert: PaymentsLatencyHigh fires when p99 latency');
  });

  it('ranks a block covering all terms above blocks covering some', async () => {
    const out = await search('disk latency');
    expect(out.split('\n')[0]).toContain('disk-full.md:1 — Disk full on a node');
    expect(out).toContain('payments-latency.md');
  });

  it('boosts a matching heading over a passing mention', async () => {
    const out = await search('roll back deploy');
    expect(out.split('\n')[0]).toContain('deploys/rollback.md');
  });

  it('matches word forms (restart, restarting)', async () => {
    expect(stem('restarting')).toBe(stem('restart'));
    expect(stem('services')).toBe(stem('service'));
    const out = await search('restart');
    expect(out).toContain('payments-latency.md:19: Restart the payments service');
    expect(out).toContain('payments-latency.md:20: Restarting clears stuck connections.');
  });

  it('ignores headings inside code blocks, non-Markdown files and symbolic links', async () => {
    const out = await search('heading inside code block');
    expect(out).not.toContain('— not a heading');
    expect(await search('hunter2 password secret')).toContain('No runbook matches');
    expect(out).not.toContain('notes.txt');
  });

  it('says so when nothing matches', async () => {
    expect(await search('kafka consumer lag')).toContain('No runbook matches');
  });
});

describe('read_runbook', () => {
  it('reads a whole file with line numbers', async () => {
    const out = await read({ path: 'disk-full.md' });
    expect(out).toContain('disk-full.md (lines 1-6 of 6)');
    expect(out).toContain('6 | Delete old logs under /var/log.');
  });

  it('reads one section with its subsections, stopping at the next sibling', async () => {
    const out = await read({ path: 'payments-latency.md', section: 'diagnosis' });
    expect(out).toContain('payments-latency.md § Diagnosis');
    expect(out).toContain('Check the database');
    expect(out).toContain('# not a heading');
    expect(out).not.toContain('Mitigation');
    expect(out).toMatch(/^ ?8 \| ## Diagnosis$/m);
  });

  it('lists the headings when the section does not exist', async () => {
    await expect(read({ path: 'payments-latency.md', section: 'Escalation' })).rejects.toMatchObject({
      code: 'section_not_found',
      message: expect.stringContaining('## Mitigation'),
    });
  });

  it('returns at most 200 lines and says how to continue', async () => {
    const out = await read({ path: 'long.md' });
    expect(out).toContain('(lines 1-200 of 450)');
    expect(out).toContain('250 more lines: call again with fromLine=201');
    expect(await read({ path: 'long.md', fromLine: 401 })).toContain('(lines 401-450 of 450)');
  });

  it('pages long reads with fromLine', async () => {
    const out = await read({ path: 'payments-latency.md', fromLine: 19 });
    expect(out).toContain('(lines 19-20 of 20)');
    expect(out).toContain('20 | Restarting clears stuck connections.');
    await expect(read({ path: 'payments-latency.md', fromLine: 99 })).rejects.toMatchObject({
      code: 'line_out_of_range',
    });
  });

  it.each(['../secret.md', '/etc/passwd', 'deploys/../../secret.md', 'leak.md'])(
    'refuses %s (outside the directory)',
    async (path) => {
      await expect(read({ path })).rejects.toMatchObject({
        code: expect.stringMatching(/path_not_allowed|not_a_runbook/),
      });
    },
  );

  it('refuses files that are not Markdown and reports missing ones', async () => {
    await expect(read({ path: 'notes.txt' })).rejects.toMatchObject({ code: 'not_a_runbook' });
    await expect(read({ path: 'nope.md' })).rejects.toMatchObject({ code: 'runbook_not_found' });
  });
});

describe('Markdown headings', () => {
  it('reads titles without their closing #s', () => {
    const lines = ['# Title', '##  Two  ## ', '### a#', '# ##', '#no', '####### seven', '  # indented #'];
    expect(headings(lines).map((h) => [h.level, h.title])).toEqual([
      [1, 'Title'],
      [2, 'Two'],
      [3, 'a#'],
      [1, '##'],
      [1, 'indented'],
    ]);
  });

  it('reads a heading with a very long run of spaces in linear time', () => {
    const started = process.cpuUsage();
    const found = headings([`# a${' '.repeat(200_000)}x`, `## b${'\t'.repeat(200_000)}#`]);
    const { user, system } = process.cpuUsage(started);
    expect(found.map((h) => h.title)).toEqual([`a${' '.repeat(200_000)}x`, 'b']);
    expect((user + system) / 1000).toBeLessThan(200);
  });
});
