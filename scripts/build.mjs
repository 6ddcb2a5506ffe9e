// `npm run build`: compiles src/ to dist/ (JavaScript and .d.ts) and copies the store's Lua scripts,
// which tsc does not. dist/ is emptied first so a file deleted from src/ does not linger in the package.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
cpSync('src/store/lua', 'dist/store/lua', { recursive: true });
