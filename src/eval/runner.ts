/**
 * Runs every (model, task, trial) not already done, `concurrency` at a time, appending each record to the
 * results file as it ends.
 */
import type { ModelPort } from '../loop/model-port.js';
import type { ModelPrice } from '../loop/run-limits.js';
import type { Logger } from '../loop/tool-contract.js';
import type { RulesMode } from './approver.js';
import { isDone, type ResultsFile, recordKey, type TrialRecord } from './results.js';
import { errorRecord, recordOf, type TrialId } from './score.js';
import type { LoadedTask, Suite } from './suite.js';
import { runTrial } from './trial.js';

export interface EvalModel {
  /** The name results are keyed by (and shown in reports). */
  name: string;
  /**
   * The model port of one trial's runs (with `agent`, of that sub-agent's runs); `placeholders` hold the
   * world's URL of that trial.
   */
  create(task: LoadedTask, placeholders: Readonly<Record<string, string>>, agent?: string): ModelPort;
}

/** Told about the eval's progress (a bar on a terminal, lines otherwise). */
export interface ProgressSink {
  start(total: number, alreadyDone: number): void;
  trialDone(record: TrialRecord): void;
  finish(): void;
}

interface RunEvalOptions {
  suite: Suite;
  tasks: readonly LoadedTask[];
  models: readonly EvalModel[];
  trials: number;
  concurrency: number;
  results: ResultsFile;
  /** Records read from the results file before this run. */
  existing: ReadonlyMap<string, TrialRecord>;
  /** enforce (default): the policy's rules decide; measure: every gated call is asked of people. */
  rules?: RulesMode;
  logger: Logger;
  progress: ProgressSink;
  prices?: Record<string, ModelPrice>;
}

interface EvalRun {
  /** Every record of the selected models, tasks and trials: those found done, then those run now. */
  records: TrialRecord[];
  /** Trials run now. */
  ran: number;
  /** Trials found done in the results file. */
  reused: number;
}

interface Job extends TrialId {
  evalModel: EvalModel;
}

async function runJob(job: Job, options: RunEvalOptions): Promise<TrialRecord> {
  const started = performance.now();
  try {
    const transcript = await runTrial({
      suite: options.suite,
      task: job.task,
      trial: job.trial,
      model: (placeholders, agent) => job.evalModel.create(job.task, placeholders, agent),
      rules: options.rules ?? 'enforce',
      logger: options.logger.child({ model: job.model }),
      ...(options.prices ? { prices: options.prices } : {}),
    });
    const record = recordOf(job, transcript, taskHashOf(job.task, options.rules));
    const m = record.metrics;
    options.logger.info(
      {
        task: record.task,
        model: record.model,
        trial: record.trial,
        runIds: transcript.runs.map((r) => r.runId),
        passed: record.passed,
        failed: record.graders.filter((g) => !g.passed).map((g) => g.grader),
        stopReason: m.stopReason,
        steps: m.steps,
        costUsd: m.costUsd,
        wallMs: m.wallMs,
      },
      'trial finished',
    );
    return record;
  } catch (err) {
    options.logger.error(
      {
        task: job.task.spec.id,
        model: job.model,
        trial: job.trial,
        err: err instanceof Error ? err.message : String(err),
      },
      'trial could not be run',
    );
    return errorRecord(
      job,
      err,
      Math.round(performance.now() - started),
      taskHashOf(job.task, options.rules),
    );
  }
}

/** Runs `jobs` with at most `concurrency` at once; resolves with the records in the order they ended. */
async function pool(jobs: readonly Job[], options: RunEvalOptions): Promise<TrialRecord[]> {
  const queue = [...jobs];
  const done: TrialRecord[] = [];
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) {
      const record = await runJob(job, options);
      await options.results.append(record);
      done.push(record);
      options.progress.trialDone(record);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  return done;
}

/**
 * The version of a task whose results stand: its hash, and the rules mode when it is not the default
 * (a trial measured with every call asked is not one of the policy deciding, so neither is reused for the
 * other).
 */
function taskHashOf(task: LoadedTask, rules: RulesMode | undefined): string {
  return rules === 'measure' ? `${task.hash}+measure` : task.hash;
}

export async function runEval(options: RunEvalOptions): Promise<EvalRun> {
  const reused: TrialRecord[] = [];
  const jobs: Job[] = [];
  // Trial by trial across tasks and models, so an interrupted run leaves every task with some trials.
  for (let trial = 1; trial <= options.trials; trial++) {
    for (const evalModel of options.models) {
      for (const task of options.tasks) {
        const found = options.existing.get(recordKey({ model: evalModel.name, task: task.spec.id, trial }));
        if (found && isDone(found, taskHashOf(task, options.rules))) reused.push(found);
        else jobs.push({ model: evalModel.name, task, trial, evalModel });
      }
    }
  }
  options.progress.start(jobs.length + reused.length, reused.length);
  const fresh = await pool(jobs, options);
  options.progress.finish();
  return { records: [...reused, ...fresh], ran: fresh.length, reused: reused.length };
}
