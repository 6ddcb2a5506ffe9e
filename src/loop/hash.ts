import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth, so equal values always serialise the same way. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/** sha256 (hex) of the canonical JSON of validated arguments: what an approval is bound to. */
export function argsHash(args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(args) ?? 'undefined')
    .digest('hex');
}

/** Identity of a call for loop detection and the rejected-call memory. */
export function callSignature(tool: string, hash: string): string {
  return `${tool}:${hash}`;
}
