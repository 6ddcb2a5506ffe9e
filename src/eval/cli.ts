/**
 * `npm run eval`: the command line. Loads the suite, runs the trials not done yet against each model
 * (any OpenAI-compatible endpoint, or the scripted `oracle`), writes results.jsonl, report.json and
 * report.html into the output folder and prints the tables; `--compare a.json b.json` prints what
 * changed between two reports instead.
 */
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { parseCommandLine, positiveInt } from '../cli/args.js';
import { EXIT, UsageError } from '../cli/errors.js';
import { loadEnvVars } from '../config/env.js';
import { ConfigError } from '../config/errors.js';
import { modelChain } from '../config/model-knobs.js';
import { type Policy, parsePolicy } from '../config/policy.js';
import { createLogger, type Logger } from '../log/logger.js';
import type { ModelPort } from '../loop/model-port.js';
import type { ModelPrice } from '../loop/run-limits.js';
import { RULES_MODES, type RulesMode } from './approver.js';
import { readReport, renderComparison } from './compare.js';
import { renderHtml } from './html.js';
import { fillPlaceholders } from './merge.js';
import { ORACLE_MODEL, oracleModel } from './oracle-model.js';
import { createProgress, type ProgressOutput } from './progress.js';
import { buildReport } from './report.js';
import { ResultsFile, readResults } from './results.js';
import { type EvalModel, runEval } from './runner.js';
import { CHECK_PLACEHOLDERS, type LoadedTask, loadSuite, selectTasks } from './suite.js';
import { renderReport } from './table.js';

const HELP = `Usage: npm run eval -- [options]
       npm run eval -- --compare a.json b.json

Runs the eval suite's tasks against models through loopgate's real engine, tools and policy.

Options:
  --model <name>       a model at OPENAI_BASE_URL (repeat to compare models); default OPENAI_MODEL.
                       "oracle" plays each task's reference solution (no endpoint needed)
  --trials <k>         trials per task and model (default 1); pass^k is reported for k = trials
  --tasks <ids>        task ids or globs, comma-separated or repeated (default all), e.g. restart-*
  --concurrency <n>    trials at once (default 2)
  --rules <mode>       enforce (default): the policy's rules allow, deny or ask as in production;
                       measure: every gated call is asked, counting those a rule would allow
  --suite <dir>        the suite folder (default eval/suites/oncall)
  --out <dir>          where results.jsonl, report.json, report.html and eval.log go (default eval-results)
  --fresh              forget earlier results in --out instead of resuming
  --price <m=in,out>   USD per million input and output tokens of model m (repeatable)
  --list               list the suite's tasks and exit
  --compare            compare two report.json files given as arguments
  -h, --help           this text

Environment: OPENAI_API_KEY (required unless every model is oracle), OPENAI_BASE_URL, OPENAI_MODEL.`;

const OPTIONS = {
  model: { type: 'string', multiple: true },
  trials: { type: 'string' },
  tasks: { type: 'string', multiple: true },
  concurrency: { type: 'string' },
  rules: { type: 'string' },
  suite: { type: 'string' },
  out: { type: 'string' },
  fresh: { type: 'boolean' },
  price: { type: 'string', multiple: true },
  list: { type: 'boolean' },
  compare: { type: 'boolean' },
} as const;

interface EvalIo {
  stdout: ProgressOutput;
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
}

function parsePrices(values: readonly string[]): Record<string, ModelPrice> {
  const prices: Record<string, ModelPrice> = {};
  for (const v of values) {
    const m = /^(.+)=([\d.]+),([\d.]+)$/.exec(v);
    if (!m)
      throw new UsageError(
        `--price expects model=input,output (USD per million tokens), not ${JSON.stringify(v)}`,
        HELP,
      );
    prices[m[1]!] = { inputPerMTok: Number(m[2]), outputPerMTok: Number(m[3]) };
  }
  return prices;
}

/** The model section of a task's policy (schemas, parallelToolCalls, fallbacks), as production reads it. */
function taskModelPolicy(task: LoadedTask, env: EvalIo['env']): Pick<Policy, 'model'> {
  return parsePolicy(JSON.stringify(fillPlaceholders(task.policy, CHECK_PLACEHOLDERS)), {
    env: { EVAL_PD_ROUTING_KEY: 'check', ...env },
    source: task.file,
  });
}

function modelsFrom(names: readonly string[], env: EvalIo['env'], logger: Logger): EvalModel[] {
  const needKey = names.some((n) => n !== ORACLE_MODEL);
  const apiKey = env.OPENAI_API_KEY;
  if (needKey && !apiKey) {
    throw new ConfigError('environment', [
      {
        key: 'OPENAI_API_KEY',
        problem: 'required to reach a model (or run --model oracle for the scripted reference)',
      },
    ]);
  }
  return names.map((name) => {
    if (name === ORACLE_MODEL) {
      return {
        name,
        create: (task, placeholders, agent) =>
          oracleModel(agent ? (task.spec.agentOracles[agent] ?? []) : task.spec.oracle, placeholders),
      };
    }
    // The same knobs as production: OPENAI_TIMEOUT_MS, OPENAI_MAX_RETRIES, and the task policy's model
    // section (schema form, parallel tool calls, fallbacks).
    const knobs = loadEnvVars(env, ['OPENAI_BASE_URL', 'OPENAI_MAX_RETRIES', 'OPENAI_TIMEOUT_MS']);
    const modelEnv = { ...knobs, OPENAI_API_KEY: apiKey!, OPENAI_MODEL: name };
    const ports = new Map<string, ModelPort>();
    return {
      name,
      create: (task) => {
        let port = ports.get(task.hash);
        if (!port) {
          port = modelChain(modelEnv, taskModelPolicy(task, env), logger, {
            primaryName: name,
            secrets: env,
          });
          ports.set(task.hash, port);
        }
        return port;
      },
    };
  });
}

async function listTasks(suiteDir: string, io: EvalIo): Promise<number> {
  const suite = await loadSuite(suiteDir);
  for (const t of suite.tasks) io.stdout.write(`${t.spec.id.padEnd(32)} ${t.spec.title}\n`);
  return EXIT.ok;
}

async function compare(paths: readonly string[], io: EvalIo): Promise<number> {
  if (paths.length !== 2) throw new UsageError('--compare takes two report.json files', HELP);
  const [a, b] = await Promise.all(paths.map(readReport));
  io.stdout.write(`${renderComparison(a!, b!, { a: paths[0]!, b: paths[1]! })}\n`);
  return EXIT.ok;
}

type Values = NonNullable<ReturnType<typeof parsed>>;

async function run(values: Values, io: EvalIo): Promise<number> {
  const suite = await loadSuite(values.suite);
  const tasks = selectTasks(suite.tasks, values.tasks);
  const out = resolve(values.out);
  const resultsPath = join(out, 'results.jsonl');
  const existing = values.fresh ? { records: new Map(), unreadable: 0 } : await readResults(resultsPath);
  if (existing.unreadable > 0)
    io.stderr.write(`${existing.unreadable} unreadable line(s) in ${resultsPath} ignored\n`);
  const results = await ResultsFile.open(resultsPath, { fresh: values.fresh });
  const logger = createLogger({
    level: 'info',
    service: 'loopgate-eval',
    destination: pino.destination({ dest: join(out, 'eval.log'), sync: true, mkdir: true }),
  });
  const models = modelsFrom(values.models, io.env, logger);
  const evalRun = await runEval({
    suite,
    tasks,
    models,
    trials: values.trials,
    concurrency: values.concurrency,
    results,
    existing: existing.records,
    rules: values.rules,
    logger,
    progress: createProgress(io.stdout),
    prices: values.prices,
  });
  const report = buildReport({
    suite: suite.spec.name,
    trials: values.trials,
    models: models.map((m) => m.name),
    tasks,
    rules: values.rules,
    records: evalRun.records,
  });
  await writeFile(join(out, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(out, 'report.html'), renderHtml(report));
  io.stdout.write(`\n${renderReport(report)}\n\n`);
  io.stdout.write(`${evalRun.ran} trial(s) run, ${evalRun.reused} reused from ${resultsPath}\n`);
  io.stdout.write(`Report: ${join(out, 'report.json')} and ${join(out, 'report.html')}\n`);
  return EXIT.ok;
}

function parsed(argv: readonly string[], env: EvalIo['env']) {
  const line = parseCommandLine(argv, OPTIONS, HELP, { min: 0, max: 2 });
  if (!line) return null;
  const v = line.values;
  if (!v.compare && line.positionals.length > 0) {
    throw new UsageError(`unexpected argument ${JSON.stringify(line.positionals[0])}`, HELP);
  }
  const models = v.model ?? (env.OPENAI_MODEL ? [env.OPENAI_MODEL] : []);
  if (!v.compare && !v.list && models.length === 0) {
    throw new UsageError('no model: pass --model <name> (or --model oracle) or set OPENAI_MODEL', HELP);
  }
  const rules = v.rules ?? 'enforce';
  if (!(RULES_MODES as readonly string[]).includes(rules)) {
    throw new UsageError(`--rules expects ${RULES_MODES.join(' or ')}, not ${JSON.stringify(rules)}`, HELP);
  }
  return {
    rules: rules as RulesMode,
    compare: v.compare === true,
    list: v.list === true,
    positionals: line.positionals,
    models: [...new Set(models)],
    trials: positiveInt(v.trials, 'trials', 100, 1, HELP),
    concurrency: positiveInt(v.concurrency, 'concurrency', 64, 2, HELP),
    tasks: (v.tasks ?? [])
      .flatMap((t) => t.split(','))
      .map((t) => t.trim())
      .filter((t) => t !== ''),
    suite: v.suite ?? 'eval/suites/oncall',
    out: v.out ?? 'eval-results',
    fresh: v.fresh === true,
    prices: parsePrices(v.price ?? []),
  };
}

/** Runs the command; resolves with the exit status (0 done, 1 error, 2 usage). */
export async function evalMain(argv: readonly string[], io: EvalIo): Promise<number> {
  try {
    const values = parsed(argv, io.env);
    if (!values) {
      io.stdout.write(`${HELP}\n`);
      return EXIT.ok;
    }
    if (values.compare) return await compare(values.positionals, io);
    if (values.list) return await listTasks(values.suite, io);
    return await run(values, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`loopgate eval: ${error.message}\n\n${error.usage}\n`);
      return EXIT.usage;
    }
    if (error instanceof ConfigError) {
      io.stderr.write(`loopgate eval: ${error.message}\n`);
      return EXIT.error;
    }
    throw error;
  }
}
