/**
 * Turns zod issues about the policy file into `ConfigProblem`s an operator can act on: the key as written
 * in YAML (`tools.http_get.allow[0]`) and what is expected there.
 */
import type { z } from 'zod';
import type { ConfigProblem } from './errors.js';

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

/** `tools.http_get.allow[0]` from `['tools', 'http_get', 'allow', 0]`. */
export function keyPath(path: Path): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out || '(top level)';
}

/** zod's own messages read "Invalid input: expected …"; keep the part that says what is expected. */
function plain(message: string): string {
  const stripped = message.replace(/^(Invalid input|Too small|Too big|Invalid option|Invalid string): /, '');
  return stripped.charAt(0).toLowerCase() + stripped.slice(1);
}

/** A union branch that failed only because the value had another type is not the one the operator meant. */
function typeMismatchOnly(branch: readonly Issue[]): boolean {
  return branch.every((i) => i.code === 'invalid_type' && i.path.length === 0);
}

interface ProblemOptions {
  /** Known keys of strict objects by key path, to suggest names in "unknown key" problems. */
  knownKeys?: Readonly<Record<string, readonly string[]>>;
}

function convert(issue: Issue, prefix: Path, options: ProblemOptions, out: ConfigProblem[]): void {
  const path = [...prefix, ...issue.path];
  switch (issue.code) {
    case 'unrecognized_keys': {
      const known = options.knownKeys?.[keyPath(path)];
      const hint = known ? ` (expected one of: ${known.join(', ')})` : '';
      for (const key of issue.keys) out.push({ key: keyPath([...path, key]), problem: `unknown key${hint}` });
      return;
    }
    case 'invalid_union': {
      const meant = issue.errors.filter((branch) => !typeMismatchOnly(branch));
      const first = meant[0];
      if (meant.length === 0 || !first) {
        const expected = issue.errors.flatMap((b) =>
          b.map((i) => (i.code === 'invalid_type' ? i.expected : '')),
        );
        const listed = [...new Set(expected.filter(Boolean))].join(' or ');
        out.push({ key: keyPath(path), problem: listed ? `expected ${listed}` : plain(issue.message) });
        return;
      }
      for (const inner of first) convert(inner, path, options, out);
      return;
    }
    case 'invalid_key':
    case 'invalid_element':
      for (const inner of issue.issues) convert(inner, path, options, out);
      return;
    case 'invalid_type':
      if (issue.input === undefined) {
        const custom = !issue.message.startsWith('Invalid input');
        out.push({
          key: keyPath(path),
          problem: `required (${custom ? issue.message : `expected ${issue.expected}`})`,
        });
        return;
      }
      out.push({ key: keyPath(path), problem: plain(issue.message) });
      return;
    default:
      out.push({ key: keyPath(path), problem: plain(issue.message) });
  }
}

/** Parse with `reportInput: true` so a missing key can be told from a wrong one. */
export function problemsOf(issues: readonly Issue[], options: ProblemOptions = {}): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const issue of issues) convert(issue, [], options, out);
  const seen = new Set<string>();
  return out.filter((p) => {
    const id = `${p.key}\u0000${p.problem}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}
