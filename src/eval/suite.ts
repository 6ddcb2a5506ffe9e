/**
 * Loads an eval suite from its folder: `suite.yaml`, `policy.yaml` and `world.yaml` (shared by every
 * task), `runbooks/` (optional), and `tasks/` with one task per `.yaml` file (or `.ts` modules whose
 * default export is a task or a list of tasks). Each task's policy and world are the suite's with the
 * task's own keys merged over them. Every problem of every file is reported at once.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { ConfigError, type ConfigProblem } from '../config/errors.js';
import { parsePolicy } from '../config/policy.js';
import { problemsOf } from '../config/policy-problems.js';
import { argsHash } from '../loop/hash.js';
import { deepMerge, fillPlaceholders } from './merge.js';
import {
  type SuiteSpec,
  suiteSpec,
  type TaskSpec,
  taskSpec,
  type WorldSpec,
  worldSpec,
} from './task-schema.js';

export interface LoadedTask {
  spec: TaskSpec;
  /** The suite's world with the task's merged over it, validated. */
  world: WorldSpec;
  /** The suite's policy with the task's merged over it; `${WORLD}` and `${RUNBOOKS}` still unfilled. */
  policy: Record<string, unknown>;
  /** Changes whenever anything the task's outcome depends on changes: stored results of others are stale. */
  hash: string;
  file: string;
}

export interface Suite {
  dir: string;
  spec: SuiteSpec;
  /** The suite's runbooks directory, when it has one. */
  runbooksDir: string | undefined;
  tasks: LoadedTask[];
}

/** Values the placeholders take when a policy is only checked, not used. */
export const CHECK_PLACEHOLDERS = { WORLD: 'http://127.0.0.1:9', RUNBOOKS: '.' };

async function readYaml(path: string, problems: ConfigProblem[]): Promise<unknown> {
  try {
    return parseYaml(await readFile(path, 'utf8')) ?? {};
  } catch (err) {
    problems.push({ key: path, problem: err instanceof Error ? err.message.split('\n')[0]! : String(err) });
    return undefined;
  }
}

function validate<S extends z.ZodType>(
  schema: S,
  data: unknown,
  where: string,
  problems: ConfigProblem[],
): z.output<S> | undefined {
  const parsed = schema.safeParse(data);
  if (parsed.success) return parsed.data;
  for (const p of problemsOf(parsed.error.issues))
    problems.push({ key: `${where}: ${p.key}`, problem: p.problem });
  return undefined;
}

async function isDir(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() === true;
}

/** The raw task objects of one file, with where each came from. */
async function rawTasks(path: string, problems: ConfigProblem[]): Promise<unknown[]> {
  if (path.endsWith('.ts')) {
    try {
      const mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
      return Array.isArray(mod.default) ? mod.default : [mod.default];
    } catch (err) {
      problems.push({
        key: path,
        problem: `cannot import: ${err instanceof Error ? err.message : String(err)}`,
      });
      return [];
    }
  }
  const data = await readYaml(path, problems);
  return data === undefined ? [] : [data];
}

async function runbookTexts(dir: string | undefined): Promise<Record<string, string>> {
  if (!dir) return {};
  const names = (await readdir(dir)).filter((n) => n.endsWith('.md')).sort();
  return Object.fromEntries(
    await Promise.all(names.map(async (n) => [n, await readFile(join(dir, n), 'utf8')])),
  );
}

interface Shared {
  dir: string;
  policy: Record<string, unknown>;
  world: Record<string, unknown>;
  runbooks: Record<string, string>;
}

function loadTask(
  raw: unknown,
  file: string,
  shared: Shared,
  problems: ConfigProblem[],
): LoadedTask | undefined {
  const where = basename(file);
  const spec = validate(taskSpec, raw, where, problems);
  if (!spec) return undefined;
  const world = validate(worldSpec, deepMerge(shared.world, spec.world), `${where}: world`, problems);
  const policy = deepMerge(shared.policy, spec.policy) as Record<string, unknown>;
  checkPolicy(policy, shared.dir, `${where}: policy`, problems);
  const agents = policy.agents !== null && typeof policy.agents === 'object' ? policy.agents : {};
  for (const agent of Object.keys(spec.agentOracles)) {
    if (!Object.hasOwn(agents, agent)) {
      problems.push({ key: `${where}: agentOracles.${agent}`, problem: 'no such agent in policy.agents' });
    }
  }
  if (!world) return undefined;
  const hash = argsHash({ spec, world, policy, runbooks: shared.runbooks }).slice(0, 16);
  return { spec, world, policy, hash, file };
}

/** A task's policy must be one loopgate accepts (with stand-in values for the world's URL). */
function checkPolicy(policy: Record<string, unknown>, dir: string, where: string, problems: ConfigProblem[]) {
  try {
    parsePolicy(JSON.stringify(fillPlaceholders(policy, CHECK_PLACEHOLDERS)), {
      env: { EVAL_PD_ROUTING_KEY: 'check' },
      baseDir: dir,
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const p of err.problems) problems.push({ key: `${where}: ${p.key}`, problem: p.problem });
  }
}

/**
 * Reads and validates the suite in `dir`.
 * @throws ConfigError listing every problem of every file.
 */
export async function loadSuite(dir: string): Promise<Suite> {
  const root = resolve(dir);
  const problems: ConfigProblem[] = [];
  const spec = validate(
    suiteSpec,
    await readYaml(join(root, 'suite.yaml'), problems),
    'suite.yaml',
    problems,
  );
  const policy = (await readYaml(join(root, 'policy.yaml'), problems)) as Record<string, unknown> | undefined;
  const world = (await readYaml(join(root, 'world.yaml'), problems)) as Record<string, unknown> | undefined;
  const runbooksDir = (await isDir(join(root, 'runbooks'))) ? join(root, 'runbooks') : undefined;
  const tasksDir = join(root, 'tasks');
  const files = (await isDir(tasksDir))
    ? (await readdir(tasksDir)).filter((f) => /\.(ya?ml|ts)$/.test(f)).sort()
    : [];
  if (files.length === 0) problems.push({ key: tasksDir, problem: 'no task files (*.yaml, *.ts)' });
  if (!spec || !policy || !world) throw new ConfigError(root, problems);
  const shared: Shared = { dir: root, policy, world, runbooks: await runbookTexts(runbooksDir) };
  const tasks: LoadedTask[] = [];
  for (const file of files) {
    const path = join(tasksDir, file);
    for (const raw of await rawTasks(path, problems)) {
      const task = loadTask(raw, path, shared, problems);
      if (task) tasks.push(task);
    }
  }
  const seen = new Set<string>();
  for (const t of tasks) {
    if (seen.has(t.spec.id))
      problems.push({ key: basename(t.file), problem: `task id ${t.spec.id} is used twice` });
    seen.add(t.spec.id);
  }
  if (problems.length > 0) throw new ConfigError(root, problems);
  return { dir: root, spec, runbooksDir, tasks };
}

/** `*` matches any run of characters; everything else literally. */
function globToRegExp(glob: string): RegExp {
  const escaped = glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*');
  return new RegExp(`^${escaped}$`);
}

/**
 * The tasks selected by `patterns` (ids or globs such as `restart-*`); all when none is given.
 * @throws ConfigError when a pattern selects nothing (a typo would otherwise run an empty eval).
 */
export function selectTasks(tasks: readonly LoadedTask[], patterns: readonly string[]): LoadedTask[] {
  if (patterns.length === 0) return [...tasks];
  const regexps = patterns.map((p) => ({ p, re: globToRegExp(p) }));
  const unmatched = regexps.filter(({ re }) => !tasks.some((t) => re.test(t.spec.id)));
  if (unmatched.length > 0) {
    throw new ConfigError(
      '--tasks',
      unmatched.map(({ p }) => ({ key: p, problem: 'matches no task id' })),
    );
  }
  return tasks.filter((t) => regexps.some(({ re }) => re.test(t.spec.id)));
}
