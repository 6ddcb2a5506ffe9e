#!/usr/bin/env node
// `npx loopgate <command>`: the operator CLI (src/cli). loopgate ships its TypeScript sources and runs
// them through tsx, a runtime dependency. Registering tsx's loader in this process, rather than spawning
// the tsx binary, keeps one process: exit codes, signals and stdio need no forwarding. Node >= 20.6 is
// needed for module.register, and loopgate requires >= 20.19 anyway.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
