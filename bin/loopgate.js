#!/usr/bin/env node
// `npx loopgate <command>`: the operator CLI (src/cli), run from the compiled dist/ with plain node.
// Without dist/ (a fresh checkout, before `npm run build`), or with LOOPGATE_FROM_SOURCE=1 (the tests,
// which must exercise the code as it is now), the TypeScript sources run through tsx, a dev dependency.
// tsx's loader is registered in this process, rather than spawning its binary, so exit codes, signals and
// stdio need no forwarding.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli/main.js', import.meta.url);
const sources = new URL('../src/cli/main.ts', import.meta.url);
if (process.env.LOOPGATE_FROM_SOURCE !== '1' && existsSync(compiled)) {
  await import(compiled.href);
} else if (existsSync(sources)) {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(
      'loopgate: dist/ is missing and tsx is not installed; run `npm ci && npm run build`\n',
    );
    process.exit(1);
  }
  register();
  await import(sources.href);
} else {
  process.stderr.write('loopgate: dist/ is missing; run `npm run build`\n');
  process.exit(1);
}
