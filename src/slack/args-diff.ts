/**
 * What an edit changed: leaf paths whose values differ between the model's arguments and the edited ones,
 * as JSON text (`absent` where a side has none). Shown on the card so approvers see exactly what changed.
 */
interface ArgChange {
  path: string;
  before: string;
  after: string;
}

const MAX_CHANGES = 30;

function leaves(value: unknown, path: string, out: Map<string, string>): void {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value);
    if (entries.length === 0) out.set(path || '(arguments)', JSON.stringify(value));
    for (const [key, inner] of entries) leaves(inner, path ? `${path}.${key}` : key, out);
    return;
  }
  out.set(path || '(arguments)', JSON.stringify(value) ?? 'null');
}

/** The first changes (at most MAX_CHANGES), and how many more there are. */
export function argsDiff(before: unknown, after: unknown): { shown: ArgChange[]; more: number } {
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  leaves(before, '', a);
  leaves(after, '', b);
  const changes: ArgChange[] = [];
  for (const path of new Set([...a.keys(), ...b.keys()])) {
    const was = a.get(path);
    const now = b.get(path);
    if (was !== now) changes.push({ path, before: was ?? 'absent', after: now ?? 'absent' });
  }
  return { shown: changes.slice(0, MAX_CHANGES), more: Math.max(0, changes.length - MAX_CHANGES) };
}
