/**
 * loopgate as an installed package: `npm pack` of this checkout, unpacked into a copy of
 * examples/tool-package. `import { defineTool } from 'loopgate'` type-checks there, the example's own
 * tests pass through `loopgate/testing`, internals stay out of reach (the exports map), and the packed,
 * compiled CLI (plain node, no tsx) loads the example's compiled tools from its package name.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleWithPackedLoopgate, type PackedProject, TSC, VITEST } from '../support/packed-loopgate.js';

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

let project: PackedProject;
beforeAll(async () => {
  project = await exampleWithPackedLoopgate();
}, 600_000);
afterAll(() => project?.remove());

describe('the packed loopgate in a tool package', { timeout: 240_000 }, () => {
  it('ships the compiled public entry points and no TypeScript sources', () => {
    const root = join(project.dir, 'node_modules', 'loopgate');
    expect(readdirSync(root).sort()).toEqual([
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'bin',
      'dist',
      'loopgate.example.yaml',
      'package.json',
    ]);
    const pub = readdirSync(join(root, 'dist', 'public')).sort();
    expect(pub).toEqual(['index.d.ts', 'index.js', 'testing.d.ts', 'testing.js']);
    expect(readdirSync(join(root, 'dist', 'store', 'lua')).length).toBeGreaterThan(0);
  });

  it("type-checks the example's `import { defineTool } from 'loopgate'` and its tests", async () => {
    const checked = await run([TSC, '-p', 'tsconfig.json'], project.dir);
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.code).toBe(0);
  });

  it('refuses a type error in a tool through the published types', async () => {
    const bad = join(project.dir, 'src', 'bad.ts');
    writeFileSync(
      bad,
      "import { defineTool } from 'loopgate';\nimport { z } from 'zod';\nexport const t = defineTool({ name: 'x', description: 'x', parameters: z.object({ n: z.number() }), effect: 'read', async execute({ n }) { return n.toUpperCase(); } });\n",
    );
    try {
      const checked = await run([TSC, '-p', 'tsconfig.json'], project.dir);
      expect(checked.code).not.toBe(0);
      expect(checked.stdout).toContain("Property 'toUpperCase' does not exist on type 'number'");
    } finally {
      rmSync(bad);
    }
  });

  it("passes the example's own tests, run through loopgate/testing", async () => {
    const tested = await run([VITEST, 'run', '--root', project.dir, '--reporter', 'verbose'], project.dir);
    expect(tested.code, tested.stdout + tested.stderr).toBe(0);
    expect(tested.stdout).toContain('7 passed');
  });

  it('exposes only the public entry points', async () => {
    const probe = await run(
      [
        '--input-type=module',
        '-e',
        "const pub = await import('loopgate'); const t = await import('loopgate/testing'); console.log(Object.keys(pub).sort().join(','), Object.keys(t).join(',')); await import('loopgate/dist/loop/tool-contract.js');",
      ],
      project.dir,
    );
    expect(probe.stdout.trim()).toBe('ToolFailure,ToolInputError,TransientToolError,defineTool runToolCall');
    expect(probe.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it("the compiled CLI (plain node) loads the example's compiled tools by package name, and refuses a missing secret", async () => {
    const built = await run([TSC, '-p', 'tsconfig.build.json'], project.dir);
    expect(built.code, built.stdout).toBe(0);
    // An operator's project: the tool package installed in its node_modules, the policy beside it.
    const ops = join(project.dir, 'ops');
    mkdirSync(join(ops, 'node_modules', '@loopgate-examples'), { recursive: true });
    symlinkSync(project.dir, join(ops, 'node_modules', '@loopgate-examples', 'crm-tools'), 'dir');
    writeFileSync(
      join(ops, 'loopgate.yaml'),
      [
        'approvals: { approvers: [U0SUPPORT] }',
        'custom:',
        '  - package: "@loopgate-examples/crm-tools"',
        '    allow: [https://crm.internal.example/customers/]',
        '',
      ].join('\n'),
    );
    const cli = join(project.dir, 'node_modules', 'loopgate', 'bin', 'loopgate.js');
    const ok = await run([cli, 'check-config', 'loopgate.yaml'], ops, {
      CRM_API_URL: 'https://crm.internal.example',
      CRM_API_TOKEN: 'crm-token-1',
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/\n {4}change_customer_plan\s+write\s+approvers: U0SUPPORT\n/);
    expect(ok.stdout).toMatch(/\n {4}lookup_customer\s+read\n/);
    const missing = await run([cli, 'check-config', 'loopgate.yaml'], ops, {
      CRM_API_URL: 'https://crm.internal.example',
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      'custom[0]: change_customer_plan needs environment variable CRM_API_TOKEN, which is not set',
    );
    expect(missing.stderr).toContain(
      'custom[0]: lookup_customer needs environment variable CRM_API_TOKEN, which is not set',
    );
  });

  it('loads a .ts tool under plain node only when the project has a TypeScript loader, and says so otherwise', async () => {
    const cli = join(project.dir, 'node_modules', 'loopgate', 'bin', 'loopgate.js');
    const tool = [
      "import { defineTool } from 'loopgate';",
      "import { z } from 'zod';",
      'const n: number = 1;',
      "export default defineTool({ name: 'ts_tool', description: 'A TypeScript tool.', parameters: z.object({}), effect: 'read', async execute() { return n; } });",
      '',
    ].join('\n');
    // Inside the project: tsx is installed there (its node_modules), so loopgate registers it for the import.
    const inside = join(project.dir, 'ts-tool');
    mkdirSync(inside);
    writeFileSync(join(inside, 'tool.ts'), tool);
    writeFileSync(join(inside, 'loopgate.yaml'), 'custom:\n  - ./tool.ts\n');
    const loaded = await run([cli, 'check-config', 'loopgate.yaml'], inside);
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stdout).toMatch(/\n {4}ts_tool\s+read\n/);
    // Outside any project with tsx: a clear error, naming the file. An enum is more than annotations, so
    // even a Node that strips types itself (22.18+, 24) needs a loader for it.
    const outside = mkdtempSync(join(tmpdir(), 'loopgate-ts-tool-'));
    try {
      writeFileSync(join(outside, 'tool.ts'), 'enum Plan { Free }\nexport const n: number = Plan.Free;\n');
      writeFileSync(join(outside, 'loopgate.yaml'), 'custom:\n  - ./tool.ts\n');
      const refused = await run([cli, 'check-config', 'loopgate.yaml'], outside);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(join(outside, 'tool.ts'));
      expect(refused.stderr).toContain('a .ts tool needs a TypeScript loader');
      // Annotations only: Node 20 needs a loader; a Node that strips types loads the module itself and
      // goes on to judge what it exports.
      writeFileSync(join(outside, 'tool.ts'), 'export const n: number = 1;\n');
      const annotated = await run([cli, 'check-config', 'loopgate.yaml'], outside);
      expect(annotated.code).toBe(1);
      expect(annotated.stderr).toContain(join(outside, 'tool.ts'));
      expect(annotated.stderr).toContain(
        (process.features as { typescript?: string }).typescript
          ? 'exports no tool'
          : 'a .ts tool needs a TypeScript loader',
      );
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
