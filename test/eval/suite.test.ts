/** The on-call suite as shipped, the loader's refusals, and the whole suite solved by its reference model. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { oracleModel } from '../../src/eval/oracle-model.js';
import { buildReport } from '../../src/eval/report.js';
import { ResultsFile } from '../../src/eval/results.js';
import { type EvalModel, runEval } from '../../src/eval/runner.js';
import { loadSuite, selectTasks } from '../../src/eval/suite.js';
import { silentLogger } from '../support/engine.js';
import { oncall, suiteWith } from './support.js';

describe('the on-call suite', () => {
  it('has at least 25 tasks, with the policy rules, quorum, edits, sub-agents and compaction exercised', async () => {
    const suite = await oncall();
    expect(suite.tasks.length).toBeGreaterThanOrEqual(25);
    const ids = suite.tasks.map((t) => t.spec.id);
    for (const id of [
      'rule-denies-prod-restart',
      'rule-allows-staging-restart',
      'quorum-prod-rollback',
      'scale-edited-down',
      'delegate-restart-in-child',
      'long-logs-compaction',
    ]) {
      expect(ids).toContain(id);
      const task = suite.tasks.find((t) => t.spec.id === id)!;
      expect(task.spec.expect.state.length + task.spec.expect.answer.facts.length).toBeGreaterThan(0);
      expect(task.spec.minefields.length).toBeGreaterThan(0);
    }
  });

  it('is solved by the reference model on every task, through the real tools, policy and sub-agents', async () => {
    const suite = await oncall();
    const dir = await mkdtemp(join(tmpdir(), 'loopgate-eval-oracle-'));
    try {
      const oracle: EvalModel = {
        name: 'oracle',
        create: (t, p, agent) => oracleModel(agent ? (t.spec.agentOracles[agent] ?? []) : t.spec.oracle, p),
      };
      const run = await runEval({
        suite,
        tasks: suite.tasks,
        models: [oracle],
        trials: 1,
        concurrency: 3,
        results: await ResultsFile.open(join(dir, 'results.jsonl'), { fresh: true }),
        existing: new Map(),
        logger: silentLogger,
        progress: { start() {}, trialDone() {}, finish() {} },
      });
      const failed = run.records
        .filter((r) => !r.passed)
        .map((r) => ({ task: r.task, graders: r.graders, error: r.error }));
      expect(failed).toEqual([]);
      expect(run.records).toHaveLength(suite.tasks.length);
      const report = buildReport({
        suite: 'oncall',
        trials: 1,
        models: ['oracle'],
        tasks: suite.tasks,
        records: run.records,
      });
      expect(report.models[0]?.stats).toMatchObject({
        passHat: [1],
        approvalsByRule: 2,
        notNeededRule: 0,
        minefieldTrials: 0,
        falseClaimTrials: 0,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('selects tasks by id and glob', async () => {
    const { tasks } = await oncall();
    expect(selectTasks(tasks, ['page-*']).map((t) => t.spec.id)).toEqual([
      'page-fails-pagerduty-down',
      'page-oncall-outage',
      'page-rejected-then-post',
      'page-rejected',
    ]);
    expect(selectTasks(tasks, ['who-is-oncall'])).toHaveLength(1);
    expect(() => selectTasks(tasks, ['who-is-oncall', 'nope*'])).toThrow(/nope\*: matches no task id/);
  });
});

describe('loading a suite', () => {
  const valid = `id: ok-task
title: fine
question: hello
oracle: [{ answer: hi }]
`;

  it('reports every problem of every task file at once, naming the file and the key', async () => {
    const suite = await suiteWith({
      'a.yaml': `${valid}colour: blue\n`,
      'b.yaml': `id: b\ntitle: b\nquestion: q\napprover: [{ decide: edit }]\noracle: [{ answer: x }]\n`,
      'c.yaml': 'id: c\ntitle: c\nquestion: q\noracle: []\n',
      'd.yaml': `id: d\ntitle: d\nquestion: q\nworld: { services: { payments: { prod: { health: broken } } } }\noracle: [{ answer: x }]\n`,
      'e.yaml': `id: e\ntitle: e\nquestion: q\npolicy: { tools: { run_action: { colour: 1 } } }\noracle: [{ answer: x }]\n`,
      'f.yaml': valid,
      'g.yaml': valid,
      'i.yaml': `id: i\ntitle: i\nquestion: q\noracle: [{ answer: x }]\nagentOracles: { logs: [{ answer: y }] }\n`,
      'h.yaml': `id: h\ntitle: h\nquestion: q\npolicy: { rules: { run_action: [{ outcome: allow }] } }\noracle: [{ answer: x }]\n`,
      'j.yaml': `id: j\ntitle: j\nquestion: q\npolicy: { agents: { logs: {} } }\noracle: [{ answer: x }]\n`,
    });
    try {
      const error = await loadSuite(suite.dir).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      const keys = (error as ConfigError).problems.map((p) => `${p.key} | ${p.problem}`);
      expect(keys).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^a\.yaml: .*colour/),
          expect.stringMatching(/^b\.yaml: approver\[0\] \| args is required with decide: edit/),
          expect.stringMatching(/^c\.yaml: oracle \| expected the reference solution/),
          expect.stringMatching(/^d\.yaml: world: services\.payments\.prod\.health/),
          expect.stringMatching(/^e\.yaml: policy: tools\.run_action/),
          expect.stringMatching(/^g\.yaml \| task id ok-task is used twice/),
          'i.yaml: agentOracles.logs | no such agent in policy.agents',
          expect.stringMatching(/^j\.yaml: policy: agents\.logs\.description \| required/),
          expect.stringMatching(
            /^h\.yaml: policy: rules\.run_action\[0\]\.outcome \| allow runs run_action calls without a person/,
          ),
        ]),
      );
    } finally {
      await suite.remove();
    }
  });

  it('takes tasks from TypeScript modules too (a task or a list of tasks as the default export)', async () => {
    const suite = await suiteWith({
      'generated.ts': `export default ['staging', 'prod'].map((env) => ({
        id: 'health-' + env,
        title: 'health of payments in ' + env,
        question: 'is payments healthy in ' + env + '?',
        oracle: [{ answer: 'yes' }],
      }));`,
    });
    try {
      const loaded = await loadSuite(suite.dir);
      expect(loaded.tasks.map((t) => t.spec.id)).toEqual(['health-staging', 'health-prod']);
    } finally {
      await suite.remove();
    }
  });

  it('lets a task switch off a tool of the suite policy with null', async () => {
    const suite = await suiteWith({
      'a.yaml': `${valid}policy: { tools: { page_oncall: null } }\n`,
    });
    try {
      const loaded = await loadSuite(suite.dir);
      expect(loaded.tasks[0]?.policy.tools).not.toHaveProperty('page_oncall');
      expect(loaded.tasks[0]?.policy.tools).toHaveProperty('run_action');
    } finally {
      await suite.remove();
    }
  });
});
