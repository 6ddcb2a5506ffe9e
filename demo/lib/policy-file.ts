/**
 * Writes the demo's policy: demo/oncall-policy.yaml with its `${NAME}` variables filled in (values are
 * local URLs and paths, quoted in the template), to a file the processes read as LOOPGATE_CONFIG.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEMO_POLICY = fileURLToPath(new URL('../oncall-policy.yaml', import.meta.url));
export const DEMO_RUNBOOKS = fileURLToPath(new URL('../runbooks', import.meta.url));

export function writeDemoPolicy(dir: string, values: { SERVICE_URL: string }): string {
  const filled = { ...values, RUNBOOKS_DIR: DEMO_RUNBOOKS };
  const text = readFileSync(DEMO_POLICY, 'utf8').replace(/\$\{([A-Z_]+)\}/g, (whole, name: string) =>
    name in filled ? filled[name as keyof typeof filled] : whole,
  );
  const path = join(dir, 'loopgate.yaml');
  writeFileSync(path, text);
  return path;
}
