/**
 * `npm run eval` end to end in process: the oracle through the in-process port, a fake OpenAI-compatible
 * server through the real adapter, resumable results, the report files and --compare.
 */
import { execFile } from 'node:child_process';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { evalMain } from '../../src/eval/cli.js';
import { fillPlaceholders } from '../../src/eval/merge.js';
import { oracleStepFor } from '../../src/eval/oracle-model.js';
import { reportSchema } from '../../src/eval/report.js';
import type { TrialRecord } from '../../src/eval/results.js';
import { type FakeReply, type FakeStep, startFakeOpenAI, type WireMessage } from '../fakes/openai-server.js';
import { oncall, SUITE_DIR } from './support.js';

function io(env: Record<string, string | undefined> = {}) {
  const out = { text: '', err: '' };
  return {
    out,
    io: {
      stdout: { write: (t: string) => (out.text += t), isTTY: false },
      stderr: { write: (t: string) => (out.err += t) },
      env,
    },
  };
}

const run = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'loopgate-eval-test-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function lines(path: string): Promise<TrialRecord[]> {
  const text = await readFile(path, 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith('{') && l.endsWith('}'))
    .map((l) => JSON.parse(l) as TrialRecord);
}

const TWO_TASKS = ['--tasks', 'who-is-oncall,deploy-*'];

describe('npm run eval with the oracle', () => {
  it('runs, then resumes: done trials are skipped, stale or broken ones run again, --fresh starts over', async () => {
    const out = await tempDir();
    const common = ['--model', 'oracle', ...TWO_TASKS, '--out', out, '--suite', SUITE_DIR];
    const args = [...common, '--trials', '2'];
    const first = io();
    expect(await evalMain(args, first.io)).toBe(0);
    expect(first.out.text).toContain('4 trial(s) run, 0 reused');
    expect(first.out.text).toMatch(/\[4\/4\] pass oracle/);
    const results = join(out, 'results.jsonl');
    expect((await lines(results)).map((r) => [r.task, r.trial, r.passed])).toEqual(
      expect.arrayContaining([
        ['who-is-oncall', 1, true],
        ['who-is-oncall', 2, true],
        ['deploy-history', 1, true],
        ['deploy-history', 2, true],
      ]),
    );

    const again = io();
    expect(await evalMain(args, again.io)).toBe(0);
    expect(again.out.text).toContain('0 trial(s) run, 4 reused');
    expect(await lines(results)).toHaveLength(4);

    // A crash mid-write leaves half a line; a record of another version of the task; a runner error.
    const [stale, broken] = await lines(results);
    await appendFile(results, `${JSON.stringify({ ...stale!, taskHash: 'older' })}\n`);
    await appendFile(results, `${JSON.stringify({ ...broken!, error: 'world failed' })}\n`);
    await appendFile(results, '{"model":"oracle","task":"who-');
    const resumed = io();
    expect(await evalMain(args, resumed.io)).toBe(0);
    expect(resumed.out.err).toContain('1 unreadable line(s)');
    expect(resumed.out.text).toContain('2 trial(s) run, 2 reused');

    const more = io();
    expect(await evalMain([...common, '--trials', '3'], more.io)).toBe(0);
    expect(more.out.text).toContain('2 trial(s) run, 4 reused');

    const fresh = io();
    expect(await evalMain([...args, '--fresh'], fresh.io)).toBe(0);
    expect(fresh.out.text).toContain('4 trial(s) run, 0 reused');
    expect(await lines(results)).toHaveLength(4);
  }, 60_000);

  it('writes a JSON report and a self-contained HTML report', async () => {
    const out = await tempDir();
    const run = io();
    const args = [
      '--model',
      'oracle',
      '--tasks',
      'who-is-oncall,approval-expired,edit-page-severity',
      '--out',
      out,
    ];
    expect(await evalMain(args, run.io)).toBe(0);
    const report = reportSchema.parse(JSON.parse(await readFile(join(out, 'report.json'), 'utf8')));
    expect(report.models).toEqual([
      expect.objectContaining({
        model: 'oracle',
        tasks: 3,
        stats: expect.objectContaining({ passHat: [1], approvalsAsked: 2 }),
      }),
    ]);
    expect(report.rules).toBe('enforce');
    expect(run.out.text).toMatch(/edit-page-severity\s+1\/1/);
    const edited = (await lines(join(out, 'results.jsonl'))).find((r) => r.task === 'edit-page-severity');
    expect(edited?.calls).toEqual([
      expect.stringMatching(
        /^page_oncall \{.*"severity":"critical"\} → succeeded, as edited: \{.*"severity":"warning"/,
      ),
    ]);
    const log = (await readFile(join(out, 'eval.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const finished = log.filter((l: { msg?: string }) => l.msg === 'trial finished');
    expect(finished).toHaveLength(3);
    expect(finished).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          service: 'loopgate-eval',
          task: 'who-is-oncall',
          passed: true,
          runIds: ['eval-who-is-oncall-1-0'],
        }),
        expect.objectContaining({ task: 'approval-expired', passed: true, stopReason: 'completed' }),
      ]),
    );
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<svg');
    expect(html).toContain('approval-expired');
    for (const external of [
      /https?:\/\//i,
      /\ssrc=/i,
      /\shref=/i,
      /<script/i,
      /<link/i,
      /@import/i,
      /url\(/i,
    ]) {
      expect(html).not.toMatch(external);
    }
  }, 60_000);

  it('lists the tasks', async () => {
    const run = io();
    expect(await evalMain(['--list'], run.io)).toBe(0);
    expect(run.out.text).toMatch(/^rule-allows-staging-restart\s+A policy rule allows restarts in staging/m);
    expect(run.out.text).toMatch(/^delegate-restart-in-child\s+A sub-agent restarts a service/m);
    expect(run.out.text).not.toContain('skip');
  });

  it('--rules measure asks people every gated call and counts those a rule would allow; enforce lets the rule decide', async () => {
    const tasks = ['--tasks', 'rule-allows-staging-restart,rule-denies-prod-restart', '--model', 'oracle'];
    const [enforceOut, measureOut] = [await tempDir(), await tempDir()];
    const enforce = io();
    expect(await evalMain([...tasks, '--out', enforceOut], enforce.io)).toBe(0);
    expect(enforce.out.text).toContain('policy rules enforced');
    const enforced = reportSchema.parse(JSON.parse(await readFile(join(enforceOut, 'report.json'), 'utf8')));
    expect(enforced.models[0]?.stats).toMatchObject({
      passHat: [1],
      approvalsAsked: 0,
      approvalsByRule: 2,
      notNeededRule: 0,
    });

    const measure = io();
    expect(await evalMain([...tasks, '--out', measureOut, '--rules', 'measure'], measure.io)).toBe(0);
    expect(measure.out.text).toContain('policy rules measured (every gated call asked)');
    const measured = reportSchema.parse(JSON.parse(await readFile(join(measureOut, 'report.json'), 'utf8')));
    expect(measured.rules).toBe('measure');
    expect(measured.models[0]?.stats).toMatchObject({
      approvalsAsked: 2,
      approvalsByRule: 0,
      notNeededRule: 1,
    });
    // The same things happened (the person decided as the rules would), only who was asked differs.
    const records = await lines(join(measureOut, 'results.jsonl'));
    const allowed = records.find((r) => r.task === 'rule-allows-staging-restart')!;
    expect(allowed.calls).toEqual([expect.stringMatching(/restart_service.*→ succeeded$/)]);
    expect(allowed.graders.filter((g) => !g.passed).map((g) => g.grader)).toEqual(['approvals']);

    // Results of one mode are not reused for the other in the same folder.
    const again = io();
    expect(await evalMain([...tasks, '--out', measureOut], again.io)).toBe(0);
    expect(again.out.text).toContain('2 trial(s) run, 0 reused');
  }, 60_000);
});

describe('npm run eval against an OpenAI-compatible endpoint', () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;

  /** A scripted server: model `good` plays each task's reference solution, `bad` always shrugs. */
  async function reply(messages: readonly WireMessage[], model: string): Promise<FakeReply> {
    if (model === 'bad') return { content: "I don't know." };
    const suite = await oncall();
    // The person's words after the time note (src/loop/state.ts).
    const question = String(messages.find((m) => m.role === 'user')?.content).replace(
      /^Current time \(UTC\): [^\n]*\n\n/,
      '',
    );
    const task = suite.tasks.find((t) => t.spec.question === question);
    const world = /http:\/\/127\.0\.0\.1:\d+/.exec(String(messages[0]?.content))?.[0];
    if (!task || !world) return { content: 'no such task' };
    const { step } = oracleStepFor(fillPlaceholders(task.spec.oracle, { WORLD: world }), messages);
    if (!step) return { content: 'script ended' };
    if ('answer' in step) return { content: step.answer };
    return {
      content: step.text ?? null,
      toolCalls: step.calls.map((c) => ({ name: c.tool, arguments: JSON.stringify(c.args) })),
    };
  }

  beforeAll(async () => {
    const steps: FakeStep[] = Array.from(
      { length: 100 },
      () => (req) => reply(req.body.messages, req.body.model),
    );
    fake = await startFakeOpenAI(steps);
  });
  afterAll(() => fake.close());
  afterEach(() => {
    expect(fake.malformed).toEqual([]);
  });

  it('runs each model through the real adapter, prices its tokens, and --compare shows what changed', async () => {
    const env = { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: fake.url };
    const [outGood, outBad] = [await tempDir(), await tempDir()];
    const base = [...TWO_TASKS, '--price', 'good=1,2', '--price', 'bad=1,2'];
    const good = io(env);
    expect(await evalMain([...base, '--model', 'good', '--out', outGood], good.io)).toBe(0);
    const bad = io(env);
    expect(await evalMain([...base, '--model', 'bad', '--out', outBad], bad.io)).toBe(0);

    const records = await lines(join(outGood, 'results.jsonl'));
    expect(records.map((r) => r.passed)).toEqual([true, true]);
    // The fake reports 10 input and 5 output tokens per call: $1 and $2 per million.
    for (const r of records) {
      expect(r.metrics.inputTokens).toBe(10 * r.metrics.steps);
      expect(r.metrics.costUsd).toBeCloseTo(r.metrics.steps * (10 * 1 + 5 * 2) * 1e-6, 12);
    }
    expect(fake.requests.some((r) => r.headers.authorization === 'Bearer test-key')).toBe(true);
    expect((await lines(join(outBad, 'results.jsonl'))).map((r) => r.passed)).toEqual([false, false]);

    const compared = io();
    const code = await evalMain(
      ['--compare', join(outGood, 'report.json'), join(outBad, 'report.json')],
      compared.io,
    );
    expect(code).toBe(0);
    expect(compared.out.text).toMatch(/good → bad\s+100% → 0% \(−100%\)/);
    expect(compared.out.text).toMatch(/who-is-oncall\s+good → bad\s+1\/1\s+0\/1/);
    expect(compared.out.text).toMatch(/deploy-history\s+good → bad\s+1\/1\s+0\/1/);
  }, 60_000);
});

describe('npm run eval as a process', () => {
  it('reads .env like every loopgate process (OPENAI_MODEL there), prints the tables and exits 0', async () => {
    const cwd = await tempDir();
    await writeFile(join(cwd, '.env'), 'OPENAI_MODEL=oracle\n');
    const { stdout } = await run(
      join(REPO_ROOT, 'node_modules/.bin/tsx'),
      [
        join(REPO_ROOT, 'src/eval/main.ts'),
        '--tasks',
        'who-is-oncall',
        '--suite',
        join(REPO_ROOT, SUITE_DIR),
      ],
      { cwd, env: { PATH: process.env.PATH ?? '' }, timeout: 60_000 },
    );
    expect(stdout).toMatch(/^oracle\s+1\s+100%/m);
    expect(await lines(join(cwd, 'eval-results', 'results.jsonl'))).toEqual([
      expect.objectContaining({ model: 'oracle', task: 'who-is-oncall', passed: true }),
    ]);
  }, 90_000);
});

describe('npm run eval refuses bad command lines', () => {
  it.each([
    [[], 2, /no model/],
    [['--model', 'oracle', '--trials', '0'], 2, /--trials expects a whole number/],
    [['--model', 'oracle', 'extra'], 2, /unexpected argument "extra"/],
    [['--compare', 'a.json'], 2, /--compare takes two report.json files/],
    [['--model', 'oracle', '--price', 'x=1'], 2, /--price expects model=input,output/],
    [['--model', 'oracle', '--rules', 'off'], 2, /--rules expects enforce or measure, not "off"/],
    [['--model', 'gpt-4.1-mini'], 1, /OPENAI_API_KEY: required/],
    [['--model', 'oracle', '--tasks', 'no-such-task'], 1, /no-such-task: matches no task id/],
  ] as const)('%j exits %i', async (argv, status, message) => {
    const run = io();
    expect(await evalMain([...argv], run.io)).toBe(status);
    expect(run.out.err).toMatch(message);
  });

  it('says what is wrong with a file given to --compare', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'a.json'), '{"version":1}');
    const run = io();
    expect(await evalMain(['--compare', join(dir, 'a.json'), join(dir, 'a.json')], run.io)).toBe(1);
    expect(run.out.err).toMatch(/a\.json:\n\s+suite: /);
  });
});
