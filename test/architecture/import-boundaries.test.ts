/**
 * The import rules of docs/architecture.md, checked on the code as it is: the engine stays free of
 * Slack, BullMQ and Redis; only its OpenAI adapter imports `openai`; a folder imports only folders on a
 * lower floor; and no file takes part in an import circle. The few crossings that exist today are listed
 * by name below, so any new one fails here, and removing one fails too until it is struck from the list.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');

/** Floors from the bottom up: a folder may import its own floor's folders only where listed, and lower floors. */
const FLOORS: readonly (readonly string[])[] = [
  ['loop', 'log', 'http'],
  // Who may approve: the one Approvers type and parser (read by tools, policy, config and store) and
  // its resolver with a lookup port per kind of approver.
  ['approvers'],
  ['tools', 'telemetry'],
  ['policy'],
  ['config', 'store'],
  ['testing'],
  ['mcp', 'metrics', 'queue', 'slack'],
  ['agents'],
  ['worker'],
  ['bot'],
  ['init', 'doctor'],
  ['cli'],
  ['eval'],
  ['main.ts'],
  // `loopgate` and `loopgate/testing`: re-exports only, of what tool authors may use.
  ['public'],
];

/** Crossings that exist today, each a debt with its reason; a new one must not be added here lightly. */
const KNOWN_UPWARD = new Set([
  // Tool settings parsers throw config's errors and read policy limits (issue 25: each tool family
  // will own its settings schema and config will assemble them through one registry).
  'src/tools/custom-tools.ts -> src/config/errors.ts',
  'src/tools/registry.ts -> src/config/errors.ts',
  'src/tools/registry.ts -> src/config/policy-limits.ts',
  'src/tools/registry.ts -> src/config/policy.ts',
  'src/tools/settings.ts -> src/config/errors.ts',
  // Policy reads the policy type and approver lists from config (issue 25: approvers in one home).
  'src/policy/checks.ts -> src/config/errors.ts',
  'src/policy/gate.ts -> src/config/policy-limits.ts',
  'src/policy/gate.ts -> src/config/policy.ts',
  // Config and policy reach up into MCP's settings.
  'src/config/policy-limits.ts -> src/mcp/settings.ts',
  'src/config/policy.ts -> src/mcp/settings.ts',
  'src/policy/checks.ts -> src/mcp/settings.ts',
  // The on-call side of approvers reaches up: its roster is cached in the store, its providers are asked
  // through the tools' guarded HTTP client, and mentions use Slack's escaping (to move beside the bot's
  // and worker's wiring when approvers grow a runtime folder of their own).
  'src/approvers/mentions.ts -> src/slack/mrkdwn.ts',
  'src/approvers/oncall/build.ts -> src/config/policy.ts',
  'src/approvers/oncall/build.ts -> src/store/index.ts',
  'src/approvers/oncall/provider-http.ts -> src/tools/net/http-client.ts',
  'src/approvers/oncall/provider-http.ts -> src/tools/net/retry-after.ts',
  'src/approvers/oncall/provider-http.ts -> src/tools/net/time-limit.ts',
  'src/approvers/oncall/roster.ts -> src/store/scripts.ts',
  'src/approvers/oncall/source.ts -> src/tools/settings.ts',
  // A child run's port is typed by the worker's runtime.
  'src/agents/child-runs.ts -> src/worker/runtime.ts',
]);

/** File circles that exist today (issue 25 removes them). */
const KNOWN_CIRCLES = new Set<string>([]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

type Import = { from: string; spec: string; target: string | null };

/** Every import of a file (static, dynamic, type-only and re-exports), resolved when relative. */
function importsOf(file: string): Import[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles.map(({ fileName: spec }) => ({
    from: relative(ROOT, file),
    spec,
    target: spec.startsWith('.')
      ? relative(ROOT, normalize(join(dirname(file), spec.replace(/\.js$/, '.ts'))))
      : null,
  }));
}

const files = sourceFiles(SRC);
const imports = files.flatMap(importsOf);

/** The folder under src/ a path belongs to (`main.ts` for the top-level entry). */
function area(path: string): string {
  const parts = path.split('/');
  return parts[1]!;
}
const floorOf = (a: string) => FLOORS.findIndex((f) => f.includes(a));
const packageOf = (spec: string) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;

/** Strongly connected components of more than one file (Tarjan). */
function circles(edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of edges.keys()) if (!idx.has(v)) visit(v);
  return found;
}

describe('import boundaries', () => {
  it('every folder of src/ has a floor', () => {
    const areas = new Set(files.map((f) => area(relative(ROOT, f))));
    expect([...areas].filter((a) => floorOf(a) < 0)).toEqual([]);
  });

  it('the engine imports neither Slack, BullMQ nor Redis, and only its OpenAI adapter imports openai', () => {
    const engine = imports.filter((i) => i.from.startsWith('src/loop/') && i.target === null);
    const banned = engine.filter((i) => /^(@slack\/|bullmq$|ioredis$)/.test(packageOf(i.spec)));
    expect(banned.map((i) => `${i.from} -> ${i.spec}`)).toEqual([]);
    const openai = engine.filter((i) => packageOf(i.spec) === 'openai').map((i) => i.from);
    expect([...new Set(openai)]).toEqual(['src/loop/openai-model.ts']);
  });

  it('a folder imports only lower floors, save the crossings listed', () => {
    const crossings = imports
      .filter((i) => i.target?.startsWith('src/'))
      .filter((i) => {
        const a = area(i.from);
        const b = area(i.target!);
        return a !== b && floorOf(b) >= floorOf(a);
      })
      .map((i) => `${i.from} -> ${i.target}`);
    const unique = [...new Set(crossings)].sort();
    expect(
      unique.filter((c) => !KNOWN_UPWARD.has(c)),
      'new imports that climb a floor',
    ).toEqual([]);
    expect(
      [...KNOWN_UPWARD].filter((c) => !unique.includes(c)),
      'crossings gone: strike them',
    ).toEqual([]);
  });

  it('no file takes part in an import circle, save the circles listed', () => {
    const edges = new Map<string, Set<string>>();
    for (const i of imports) {
      if (!i.target?.startsWith('src/')) continue;
      if (!edges.has(i.from)) edges.set(i.from, new Set());
      edges.get(i.from)!.add(i.target);
    }
    const found = circles(edges).map((c) => c.join(', '));
    expect(
      found.filter((c) => !KNOWN_CIRCLES.has(c)),
      'new import circles',
    ).toEqual([]);
    expect(
      [...KNOWN_CIRCLES].filter((c) => !found.includes(c)),
      'circles gone: strike them',
    ).toEqual([]);
  });

  it('catches a crossing and a circle when one is made (the checks can fail)', () => {
    const edges = new Map([
      ['a.ts', new Set(['b.ts'])],
      ['b.ts', new Set(['a.ts'])],
    ]);
    expect(circles(edges)).toEqual([['a.ts', 'b.ts']]);
    expect(floorOf('loop')).toBeLessThan(floorOf('worker'));
  });
});
