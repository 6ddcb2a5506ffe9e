/** Shared by the eval tests: the on-call suite, and one trial of a task with a scripted trajectory. */
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RulesMode } from '../../src/eval/approver.js';
import { oracleModel } from '../../src/eval/oracle-model.js';
import type { TrialRecord } from '../../src/eval/results.js';
import { recordOf } from '../../src/eval/score.js';
import { type LoadedTask, loadSuite, type Suite } from '../../src/eval/suite.js';
import type { OracleStep } from '../../src/eval/task-schema.js';
import type { Transcript } from '../../src/eval/transcript.js';
import { runTrial } from '../../src/eval/trial.js';
import { silentLogger } from '../support/engine.js';

export const SUITE_DIR = 'eval/suites/oncall';

let loaded: Promise<Suite> | undefined;

/** The real on-call suite, loaded once per test file. */
export function oncall(): Promise<Suite> {
  loaded ??= loadSuite(SUITE_DIR);
  return loaded;
}

export async function task(id: string): Promise<LoadedTask> {
  const found = (await oncall()).tasks.find((t) => t.spec.id === id);
  if (!found) throw new Error(`no task ${id} in the suite`);
  return found;
}

export interface Played {
  transcript: Transcript;
  record: TrialRecord;
}

export interface PlayOptions {
  /** Another suite than the on-call one. */
  suite?: Suite;
  rules?: RulesMode;
  /** The steps of each sub-agent's runs (default the task's `agentOracles`). */
  agents?: Record<string, OracleStep[]>;
}

/**
 * One trial of `taskId` through the real engine, tools and world, the model playing `steps` (default the
 * task's own reference solution).
 */
export async function play(taskId: string, steps?: OracleStep[], options: PlayOptions = {}): Promise<Played> {
  const s = options.suite ?? (await oncall());
  const t = s.tasks.find((x) => x.spec.id === taskId);
  if (!t) throw new Error(`no task ${taskId}`);
  const transcript = await runTrial({
    suite: s,
    task: t,
    trial: 1,
    model: (placeholders, agent) =>
      oracleModel(
        agent ? (options.agents?.[agent] ?? t.spec.agentOracles[agent] ?? []) : (steps ?? t.spec.oracle),
        placeholders,
      ),
    ...(options.rules ? { rules: options.rules } : {}),
    logger: silentLogger,
  });
  const record = recordOf({ model: 'scripted', task: t, trial: 1 }, transcript);
  return { transcript, record };
}

export function graderOf(record: TrialRecord, grader: string) {
  const found = record.graders.find((g) => g.grader === grader);
  if (!found) throw new Error(`no grader ${grader} in the record`);
  return found;
}

/** A suite with the on-call suite's policy, world and runbooks and only the given task files. */
export async function suiteWith(
  tasks: Record<string, string>,
): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'loopgate-eval-suite-'));
  await cp(SUITE_DIR, dir, { recursive: true, filter: (src) => !src.includes('/tasks') });
  await mkdir(join(dir, 'tasks'));
  for (const [name, text] of Object.entries(tasks)) await writeFile(join(dir, 'tasks', name), text);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
