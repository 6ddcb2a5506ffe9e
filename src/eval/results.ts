/**
 * The results file: one JSON line per finished trial, keyed by model, task and trial number, appended as
 * each trial ends. A rerun reads it and skips the trials already done for the same version of the task
 * (its hash), so an interrupted eval resumes where it stopped; `--fresh` starts the file over. A line cut
 * short by a crash is ignored (and counted), never fatal.
 */
import { appendFile, mkdir, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { GRADERS } from './graders/grade.js';

const trialMetrics = z.object({
  /** Model calls over every run of the trial. */
  steps: z.number(),
  inputTokens: z.number(),
  /** Of the input, tokens the server read from its prompt cache (absent in results of older versions). */
  cachedInputTokens: z.number().default(0),
  outputTokens: z.number(),
  costUsd: z.number(),
  wallMs: z.number(),
  stopReason: z.string().nullable(),
  /** Approvals put to the scripted person. */
  approvalsAsked: z.number(),
  /** Gated calls a policy rule decided (no person asked). */
  approvalsByRule: z.number(),
  /** Approvals asked for calls the task did not need. */
  notNeededTask: z.number(),
  /** Approvals asked for calls a policy rule would allow (null in records of older versions). */
  notNeededRule: z.number().nullable(),
  minefieldsHit: z.array(z.string()),
  /** Sentences of the answer claiming an action that did not succeed. */
  falseClaims: z.array(z.string()),
  /** Final answers loopgate's own validator sent back to the model. */
  answerRejections: z.number(),
  toolRetries: z.number(),
  /** Compactions of the history, over every run of the trial (sub-agents' included). */
  compactions: z.number().default(0),
  /** Sub-agent runs the trial made. */
  subagentRuns: z.number().default(0),
});
export type TrialMetrics = z.output<typeof trialMetrics>;

const trialRecord = z.object({
  model: z.string(),
  task: z.string(),
  trial: z.number().int().min(1),
  taskHash: z.string(),
  passed: z.boolean(),
  graders: z.array(z.object({ grader: z.enum(GRADERS), passed: z.boolean(), notes: z.array(z.string()) })),
  metrics: trialMetrics,
  answer: z.string().nullable(),
  /** The calls made, in order, one line each (`run_action {…} → rejected`), for a person to audit. */
  calls: z.array(z.string()),
  /** The runner itself failed (not the agent): such a trial is run again on the next run. */
  error: z.string().optional(),
  at: z.string(),
});
export type TrialRecord = z.output<typeof trialRecord>;

export const recordKey = (r: Pick<TrialRecord, 'model' | 'task' | 'trial'>) =>
  `${r.model}\u0000${r.task}\u0000${r.trial}`;

interface ReadResults {
  /** The latest record of each key. */
  records: Map<string, TrialRecord>;
  /** Lines that could not be read (a crash mid-write). */
  unreadable: number;
}

export async function readResults(path: string): Promise<ReadResults> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: new Map(), unreadable: 0 };
    throw err;
  }
  const records = new Map<string, TrialRecord>();
  let unreadable = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let parsed: ReturnType<typeof trialRecord.safeParse>;
    try {
      parsed = trialRecord.safeParse(JSON.parse(line));
    } catch {
      unreadable++;
      continue;
    }
    if (parsed.success) records.set(recordKey(parsed.data), parsed.data);
    else unreadable++;
  }
  return { records, unreadable };
}

/** Appends records one line at a time, in the order given, even when trials finish together. */
export class ResultsFile {
  private chain: Promise<void> = Promise.resolve();

  private constructor(readonly path: string) {}

  /**
   * Opens the file (creating its folder); `fresh` deletes what it held. A last line cut short by a crash
   * is ended first, so the next record starts on a line of its own.
   */
  static async open(path: string, options: { fresh: boolean }): Promise<ResultsFile> {
    await mkdir(dirname(path), { recursive: true });
    if (options.fresh) await rm(path, { force: true });
    const text = await readFile(path, 'utf8').catch(() => '');
    if (text !== '' && !text.endsWith('\n')) await appendFile(path, '\n');
    return new ResultsFile(path);
  }

  append(record: TrialRecord): Promise<void> {
    const line = `${JSON.stringify(record)}\n`;
    const written = this.chain.then(() => appendFile(this.path, line));
    // A failed write is the caller's to handle; the lines after it are still written.
    this.chain = written.catch(() => {});
    return written;
  }
}

/** Whether a stored record counts as done for the current version of its task. */
export const isDone = (record: TrialRecord | undefined, taskHash: string): boolean =>
  record !== undefined && record.error === undefined && record.taskHash === taskHash;
