/** The installed loopgate's version, read from its own package.json (the one CHANGELOG.md names). */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const packageJson = z.object({ name: z.string(), version: z.string() });

export function loopgateVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return packageJson.parse(JSON.parse(text)).version;
}
