/**
 * Rule evaluation per gated call (src/policy/gate.ts): 100 rules on one tool, the deciding rule last, so
 * every call tries them all. Goal: <= 50 µs per gated call. Three rule sets: realistic (equals, one of,
 * numeric, globs, a fifth regexes), all globs, and all RE2 regexes (the worst case). Prints figures only.
 */
import { parsePolicy } from '../src/config/policy.js';
import { decideGate } from '../src/policy/gate.js';

const CALLS = 20_000;

function rule(i: number, kind: 'mixed' | 'glob' | 'regex'): string {
  const k = kind === 'mixed' ? (['equals', 'oneOf', 'gt', 'glob', 'regex'] as const)[i % 5] : kind;
  const when = {
    equals: `{ action: restart_service, params.env: env${i} }`,
    oneOf: `{ params.service: { oneOf: [svc${i}a, svc${i}b, svc${i}c] } }`,
    gt: `{ params.replicas: { gt: ${1000 + i} } }`,
    glob: `{ params.service: { glob: "team${i}-*-svc" } }`,
    regex: `{ params.service: { regex: "^team${i}-[a-z]+-(api|web)$" } }`,
  }[k ?? 'equals'];
  return `    - { name: r${i}, when: ${when}, outcome: ask, approvers: [U0R${i}] }`;
}

function policyOf(kind: 'mixed' | 'glob' | 'regex') {
  const rules = Array.from({ length: 99 }, (_, i) => rule(i, kind));
  rules.push(
    '    - { name: last, when: { params.env: prod }, outcome: ask, quorum: 2, approvers: [S0LEADS] }',
  );
  return parsePolicy(
    `approvals: { approvers: [U0MGR] }\ncustom: [{ path: ./x.ts, name: run_action }]\nrules:\n  run_action:\n${rules.join('\n')}\n`,
    { env: {} },
  );
}

const args = { action: 'restart_service', params: { service: 'payments-api', env: 'prod', replicas: 3 } };

for (const kind of ['mixed', 'glob', 'regex'] as const) {
  const policy = policyOf(kind);
  for (let i = 0; i < 2_000; i++) decideGate(policy, 'run_action', args); // warm-up
  const samples: number[] = [];
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    const d = decideGate(policy, 'run_action', args);
    samples.push(performance.now() - t);
    if (d.kind !== 'ask' || d.rule?.index !== 99) throw new Error('the last rule should decide');
  }
  const total = performance.now() - started;
  samples.sort((a, b) => a - b);
  const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
  console.log(
    `policy: 100 rules (${kind}), the last one deciding: ${us(total / CALLS)} mean, ` +
      `${us(samples[Math.floor(CALLS / 2)] ?? 0)} p50, ${us(samples[Math.floor(CALLS * 0.99)] ?? 0)} p99 per gated call (goal <= 50 µs)`,
  );
}
