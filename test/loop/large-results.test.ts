import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cutLongText,
  handleProblem,
  keepText,
  readPage,
  resultHandle,
  textLines,
  utf8Prefix,
  WRAP_CHARS,
} from '../../src/loop/large-results.js';
import type { ResultStore } from '../../src/loop/ports.js';
import { memoryResultStore } from '../support/memory-results.js';

const numbered = (n: number, width = 20) =>
  Array.from({ length: n }, (_, i) => `line ${i + 1} ${'x'.repeat(width)}`).join('\n');

describe('textLines', () => {
  it('splits at newlines, drops a trailing \\r, and wraps lines longer than WRAP_CHARS', () => {
    expect(textLines('a\r\nb\n\nc')).toEqual(['a', 'b', '', 'c']);
    const long = 'y'.repeat(WRAP_CHARS * 2 + 5);
    expect(textLines(`x\n${long}`).map((l) => l.length)).toEqual([1, WRAP_CHARS, WRAP_CHARS, 5]);
  });
});

describe('handles', () => {
  it('name the run, so a handle of another run or a made-up one is refused with a reason', () => {
    const h = resultHandle('run-a', 'lg3_0_call/1');
    expect(h).toMatch(/^res_[0-9a-f]{8}_lg3_0_call1$/);
    expect(handleProblem(h, 'run-a')).toBeNull();
    expect(handleProblem(h, 'run-b')).toMatch(/belongs to another run/);
    expect(handleProblem('res_zz', 'run-a')).toMatch(/not a result handle/);
    expect(resultHandle('run-a', 'lg3_0_call/1')).toBe(h);
  });
});

describe('utf8Prefix', () => {
  it('keeps the longest start within the byte bound, never half a character', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.integer({ min: 0, max: 300 }),
        (s, max) => {
          const p = utf8Prefix(s, max);
          expect(s.startsWith(p)).toBe(true);
          expect(Buffer.byteLength(p)).toBeLessThanOrEqual(max);
          expect(Buffer.from(p).toString()).toBe(p);
          if (p.length < s.length) {
            const next = s.codePointAt(p.length)!;
            expect(Buffer.byteLength(p) + Buffer.byteLength(String.fromCodePoint(next))).toBeGreaterThan(max);
          }
        },
      ),
    );
  });
});

describe('cutLongText', () => {
  it('shows whole lines from the start and the end, with their numbers, the size and the handle', () => {
    const text = numbered(2_000);
    const result = cutLongText(text, 4_000, { handle: 'res_00000000_c1', keptChars: text.length });
    if (!result.ok) throw new Error('expected ok');
    const data = result.data as string;
    expect(data.length).toBeLessThanOrEqual(4_000);
    const { head, tail, total } = result.truncated!.lines!;
    expect(total).toBe(2_000);
    expect(head).toBeGreaterThan(50);
    expect(tail).toBeGreaterThan(20);
    expect(data.startsWith('line 1 x')).toBe(true);
    expect(data.endsWith('line 2000 xxxxxxxxxxxxxxxxxxxx')).toBe(true);
    expect(data).toContain(
      `showing lines 1-${head} and ${total - tail + 1}-${total} of 2000 lines, ${text.length} characters`,
    );
    expect(data).toContain(`read_result {"handle":"res_00000000_c1","offset":${head + 1}}`);
    expect(result.truncated).toMatchObject({ totalChars: text.length, handle: 'res_00000000_c1' });
  });

  it('says why the rest cannot be read when the result was not kept, and gives no handle', () => {
    const result = cutLongText(numbered(2_000), 4_000, { handle: null, reason: 'run full' });
    if (!result.ok) throw new Error('expected ok');
    expect(result.data).toContain('could not be kept (run full)');
    expect(result.truncated?.handle).toBeUndefined();
  });

  it('says when only the start of a very long result is kept', () => {
    const text = numbered(2_000);
    const result = cutLongText(text, 4_000, { handle: 'res_00000000_c1', keptChars: 1_000 });
    expect(result.ok && result.data).toContain('Only its first 1000 characters are kept');
  });

  it('cuts by characters when not even the first line fits', () => {
    const text = 'z'.repeat(5_000);
    const result = cutLongText(text, 700, { handle: 'res_00000000_c1', keptChars: 5_000 });
    if (!result.ok) throw new Error('expected ok');
    expect((result.data as string).length).toBeLessThanOrEqual(700);
    expect(result.truncated?.lines).toBeUndefined();
    expect(result.data).toContain('res_00000000_c1');
  });
});

describe('readPage', () => {
  const text = numbered(1_000);

  it('pages by lines from an offset and says where to read on', () => {
    const page = readPage(text, 'res_h', { offset: 41, lines: 10 }, 16_000);
    if (!page.ok) throw new Error(page.problem);
    const rows = page.page.split('\n');
    expect(rows[0]).toBe('[lines 41-50 of 1000]');
    expect(rows[1]).toBe('line 41 xxxxxxxxxxxxxxxxxxxx');
    expect(rows[10]).toBe('line 50 xxxxxxxxxxxxxxxxxxxx');
    expect(rows[11]).toBe('[950 more lines: read_result {"handle":"res_h","offset":51}]');
  });

  it('reads 200 lines from line 1 unless told otherwise', () => {
    const page = readPage(text, 'res_h', {}, 100_000);
    expect(page.ok && page.page.split('\n')[0]).toBe('[lines 1-200 of 1000]');
  });

  it('stops a page at the character bound and ends the last page with "end of the result"', () => {
    const page = readPage(text, 'res_h', { offset: 1, lines: 1_000 }, 2_000);
    if (!page.ok) throw new Error(page.problem);
    expect(page.page.length).toBeLessThanOrEqual(2_000);
    expect(page.page).toMatch(/more lines: read_result/);
    const last = readPage(text, 'res_h', { offset: 995 }, 16_000);
    expect(last.ok && last.page).toMatch(/\[lines 995-1000 of 1000\][\s\S]*\[end of the result\]$/);
  });

  it('greps lines containing a text, any case, with their numbers, from the offset', () => {
    const logs = [
      'GET /a 200',
      'GET /b 500 Timeout',
      'GET /c 200',
      'POST /d timeout',
      'GET /e 500 TIMEOUT',
    ].join('\n');
    const page = readPage(logs, 'res_h', { grep: 'timeout', offset: 3 }, 16_000);
    expect(page.ok && page.page).toBe(
      '[lines containing "timeout" (any case) from line 3 of 5: 2 shown]\n4: POST /d timeout\n5: GET /e 500 TIMEOUT\n[no more matches]',
    );
    const limited = readPage(logs, 'res_h', { grep: 'timeout', lines: 1 }, 16_000);
    expect(limited.ok && limited.page).toContain(
      '2: GET /b 500 Timeout\n[more matches: read_result {"handle":"res_h","offset":4,"grep":"timeout"}]',
    );
    expect(readPage(logs, 'res_h', { grep: 'nothing' }, 16_000)).toEqual({
      ok: true,
      page: '[no lines containing "nothing" (any case) from line 1 of 5]',
    });
  });

  it('refuses an offset past the end', () => {
    expect(readPage(text, 'res_h', { offset: 1_001 }, 16_000)).toEqual({
      ok: false,
      problem: 'offset 1001 is past the end: the result under res_h has 1000 lines.',
    });
  });

  it('pages through a one-line document by its wrapped lines', () => {
    const minified = JSON.stringify(Array.from({ length: 500 }, (_, i) => ({ id: i, name: `item-${i}` })));
    const lines = textLines(minified);
    expect(lines.length).toBeGreaterThan(5);
    const page = readPage(minified, 'res_h', { offset: 3, lines: 2 }, 16_000);
    expect(page.ok && page.page).toBe(
      `[lines 3-4 of ${lines.length}]\n${lines[2]}\n${lines[3]}\n[${lines.length - 4} more lines: read_result {"handle":"res_h","offset":5}]`,
    );
  });

  it('reads every line of any text exactly once when following the "read on" offsets', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 1_500 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1_000, max: 6_000 }),
        (rows, lines, maxChars) => {
          const whole = rows.join('\n');
          const seen: string[] = [];
          let offset = 1;
          for (let guard = 0; guard < 10_000; guard++) {
            const page = readPage(whole, 'res_h', { offset, lines }, maxChars);
            if (!page.ok) throw new Error(page.problem);
            expect(page.page.length).toBeLessThanOrEqual(maxChars);
            const body = page.page.split('\n');
            const next = /"offset":(\d+)/.exec(body.at(-1)!);
            seen.push(...body.slice(1, -1));
            if (!next) break;
            offset = Number(next[1]);
          }
          expect(seen).toEqual(textLines(whole));
        },
      ),
    );
  });
});

describe('keepText', () => {
  it('keeps the start up to the per-result bound and reports a refusal of the per-run bound', async () => {
    const store = memoryResultStore();
    const limits = { maxStoredResultBytes: 100, maxStoredBytesPerRun: 150 };
    expect(await keepText(store, 'res_a', 'a'.repeat(300), limits)).toEqual({
      handle: 'res_a',
      keptChars: 100,
    });
    expect(store.texts.get('res_a')).toBe('a'.repeat(100));
    expect(await keepText(store, 'res_b', 'b'.repeat(300), limits)).toEqual({
      handle: null,
      reason: "this run's kept results would pass 150 bytes",
    });
    expect(await keepText(store, 'res_a', 'c'.repeat(300), limits)).toEqual({
      handle: 'res_a',
      keptChars: 100,
    });
  });

  it('reports a store that throws as not kept, and keeps nothing when the bound is 0', async () => {
    const broken: ResultStore = {
      keep: () => Promise.reject(new Error('ECONNREFUSED')),
      read: () => Promise.resolve(null),
    };
    const limits = { maxStoredResultBytes: 100, maxStoredBytesPerRun: 150 };
    expect(await keepText(broken, 'res_a', 'x', limits)).toEqual({
      handle: null,
      reason: 'the result store could not be reached',
    });
    expect(
      await keepText(memoryResultStore(), 'res_a', 'x', { ...limits, maxStoredResultBytes: 0 }),
    ).toMatchObject({
      handle: null,
    });
  });
});
