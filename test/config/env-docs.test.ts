import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_VAR_NAMES } from '../../src/config/env.js';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/** Where .env.example's last section starts: the secrets the example policy names, not loopgate's own. */
const POLICY_SECRETS = '# --- Secrets the example policy names';
const policySecretsLine = () =>
  read('.env.example')
    .split('\n')
    .findIndex((l) => l.startsWith(POLICY_SECRETS));

describe('documentation of the environment', () => {
  it('.env.example sets, non-empty, every variable loopgate.example.yaml names (keys ending in Env)', () => {
    const named = new Set<string>();
    for (const line of read('loopgate.example.yaml').split('\n')) {
      const code = line.replace(/#.*$/, '');
      for (const m of code.matchAll(/\w+Env:\s*(?:\{([^}]*)\}|([A-Z][A-Z0-9_]*))/g)) {
        if (m[2]) named.add(m[2]);
        for (const v of (m[1] ?? '').matchAll(/:\s*([A-Z][A-Z0-9_]*)/g)) if (v[1]) named.add(v[1]);
      }
    }
    const tail = read('.env.example').split('\n').slice(policySecretsLine());
    const set = new Set(tail.flatMap((l) => /^([A-Z0-9_]+)=(.+)$/.exec(l)?.[1] ?? []));
    expect(named.size).toBeGreaterThan(0);
    expect([...named].filter((n) => !set.has(n))).toEqual([]);
    expect([...set].filter((n) => !named.has(n))).toEqual([]);
  });

  it('.env.example sets exactly the variables loopgate reads, each after a comment', () => {
    const lines = read('.env.example').split('\n').slice(0, policySecretsLine());
    const assigned = lines.flatMap((line, i) => {
      const name = /^([A-Z0-9_]+)=/.exec(line)?.[1];
      return name === undefined ? [] : [{ name, commented: lines[i - 1]?.startsWith('#') ?? false }];
    });
    expect(assigned.map((a) => a.name).sort()).toEqual([...ENV_VAR_NAMES].sort());
    expect(assigned.filter((a) => !a.commented)).toEqual([]);
  });

  it('the environment table in docs/operations.md has a row for every variable', () => {
    const rows = [...read('docs/operations.md').matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect(rows.sort()).toEqual([...ENV_VAR_NAMES].sort());
  });
});
