/**
 * MCP servers in the docs and the example policy are started as `npx -y <package>@<version>`: a bare
 * name lets npx fetch whatever package of that name the registry has (in the image, installed without
 * dev dependencies, nothing local answers to it). Each pinned package is the one the tests run, at the
 * same version.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { markdownFiles, readRepo } from './markdown-files.js';

const lock = z
  .object({ packages: z.record(z.string(), z.object({ version: z.string().optional() })) })
  .parse(JSON.parse(readRepo('package-lock.json')));

const sources = [...markdownFiles(), 'loopgate.example.yaml'];

/** Every `command: [npx, …]` of a YAML example, as written. */
const npxCommands = (text: string) =>
  [...text.matchAll(/command: \[npx,([^\]]*)\]/g)].map((m) => m[1] as string);

describe('MCP server examples', () => {
  it('exist', () => {
    expect(sources.flatMap((file) => npxCommands(readRepo(file))).length).toBeGreaterThan(0);
  });

  it.each(sources)(
    '%s: npx -y with a scoped package pinned to the version installed for the tests',
    (file) => {
      for (const args of npxCommands(readRepo(file))) {
        const m = /^\s*-y,\s*"(@[a-z0-9-]+\/[a-z0-9-]+)@(\d[^"]*)"/.exec(args);
        expect(m, `${file}: [npx,${args}]`).not.toBeNull();
        const [, name, version] = m ?? [];
        expect(lock.packages[`node_modules/${name}`]?.version, `${file}: ${name}`).toBe(version);
      }
    },
  );
});
