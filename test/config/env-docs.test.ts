import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_VAR_NAMES } from '../../src/config/env.js';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('documentation of the environment', () => {
  it('.env.example sets exactly the variables loopgate reads, each after a comment', () => {
    const lines = read('.env.example').split('\n');
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
