import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';

/** A Redis connection of the store: standalone or Cluster (every run's keys share one slot). */
export type RedisClient = Redis | Cluster;

/**
 * Key counts of the scripts, as their file names (`<folder>/<name>-<keys>.lua`) declare them. Each
 * folder of ./lua belongs to the store module that runs its scripts (runs, approvals, ledger, threads,
 * leases, results, feedback, slackBudget, budgetAsks); `shared` holds scripts several modules run, `includes` the fragments they inline.
 * The TypeScript modules sit in the matching folders of src/store (results in runs/, slackBudget and
 * budgetAsks in budget/, leases in leases.ts); this module stays at the top, so ./lua is found beside it.
 */
const SCRIPT_KEYS = {
  createRun: 3,
  pauseApprovals: 1,
  acquireLease: 2,
  renewLease: 1,
  releaseLease: 1,
  saveStep: 7,
  expireRun: 6,
  appendTrace: 2,
  updateIfExists: 1,
  createApprovals: 3,
  decideApproval: 3,
  withdrawDecision: 2,
  cancelApprovals: 1,
  beginExecution: 2,
  finishExecution: 2,
  blockExecution: 2,
  claimThread: 2,
  releaseThread: 3,
  reapproveCall: 5,
  withdrawReapproval: 3,
  editApproval: 5,
  askAgainForPlan: 5,
  withdrawEdit: 4,
  escalateApproval: 1,
  shadowDecide: 1,
  keepResult: 3,
  recordFeedback: 2,
  commentFeedback: 2,
  takeSlackSlot: 3,
  pauseSlackBudget: 1,
  createBudgetAsk: 2,
  decideBudgetAsk: 1,
} as const;

export type ScriptName = keyof typeof SCRIPT_KEYS;

/** Every script of the store (tests check each on a Redis Cluster). */
export const SCRIPT_NAMES = Object.keys(SCRIPT_KEYS) as readonly ScriptName[];

/** Runs one of the store's scripts; the reply is raw and must be decoded by the caller. */
export type RunScript = (
  name: ScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
) => Promise<unknown>;

const COMMAND_PREFIX = 'loopgate_';
const INCLUDE = /^-- @include ([a-z-]+)\s*$/gm;

/**
 * The .lua files sit next to this module in the source tree. `tsc` does not copy them, so a build
 * under dist/ reads them from the source tree (src/store/lua) unless the build copies them along.
 */
function luaDir(): string {
  const candidates = [new URL('./lua/', import.meta.url), new URL('../../src/store/lua/', import.meta.url)];
  for (const url of candidates) {
    const dir = fileURLToPath(url);
    if (existsSync(dir)) return dir;
  }
  throw new Error(`loopgate store: Lua scripts not found (looked in ${candidates.map(String).join(', ')})`);
}

let sources: Map<ScriptName, string> | undefined;

/** Reads every script once per process, inlining `-- @include <name>` lines from ./lua/includes. */
function scriptSources(): Map<ScriptName, string> {
  if (sources) return sources;
  const dir = luaDir();
  const found = new Map<ScriptName, string>();
  const folders = readdirSync(dir, { withFileTypes: true }).filter(
    (e) => e.isDirectory() && e.name !== 'includes',
  );
  for (const folder of folders) {
    for (const file of readdirSync(`${dir}${folder.name}`)) {
      const match = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
      if (!match) continue;
      const [, name, keys] = match;
      if (!isScriptName(name) || SCRIPT_KEYS[name] !== Number(keys) || found.has(name)) {
        throw new Error(`loopgate store: unexpected Lua script ${folder.name}/${file}`);
      }
      const text = readFileSync(`${dir}${folder.name}/${file}`, 'utf8');
      found.set(
        name,
        text.replace(INCLUDE, (_line, include: string) =>
          readFileSync(`${dir}includes/${include}.lua`, 'utf8'),
        ),
      );
    }
  }
  const missing = Object.keys(SCRIPT_KEYS).filter((name) => !found.has(name as ScriptName));
  if (missing.length > 0) throw new Error(`loopgate store: missing Lua scripts ${missing.join(', ')}`);
  sources = found;
  return found;
}

const isScriptName = (name: string | undefined): name is ScriptName =>
  name !== undefined && name in SCRIPT_KEYS;

const evalTexts = new Map<ScriptName, string>();

/**
 * The text of a script without its header comment, for sending it with EVAL where EVALSHA's fallback
 * cannot help: inside a MULTI, a NOSCRIPT error would come back only with EXEC, after the transaction.
 */
export function scriptSource(name: ScriptName): string {
  const cached = evalTexts.get(name);
  if (cached !== undefined) return cached;
  const source = scriptSources().get(name);
  if (source === undefined) throw new Error(`loopgate store: no script ${name}`);
  const text = source.replace(/^--\[\[[\s\S]*?\]\]\s*/, '');
  evalTexts.set(name, text);
  return text;
}

/** Defines the store's scripts on a connection (ioredis `defineCommand`: EVALSHA with EVAL fallback). */
export function defineScripts(redis: RedisClient): RunScript {
  for (const [name, lua] of scriptSources()) {
    redis.defineCommand(`${COMMAND_PREFIX}${name}`, { numberOfKeys: SCRIPT_KEYS[name], lua });
  }
  return (name, keys, args) => {
    if (keys.length !== SCRIPT_KEYS[name]) {
      throw new TypeError(`${name} takes ${SCRIPT_KEYS[name]} keys, got ${keys.length}`);
    }
    const command: unknown = Reflect.get(redis, `${COMMAND_PREFIX}${name}`);
    if (typeof command !== 'function') throw new Error(`loopgate store: script ${name} is not defined`);
    return command.apply(redis, [...keys, ...args]) as Promise<unknown>;
  };
}
