import { z } from 'zod';

/**
 * `tools.search_runbooks`: enables both `search_runbooks` and `read_runbook` over one directory
 * (relative paths are resolved against the policy file's directory when the policy loads).
 */
export const runbookSettings = z.strictObject({
  dir: z.string({ error: 'expected the path of the runbook directory' }).min(1, {
    error: 'expected the path of the runbook directory',
  }),
  maxResults: z.number().int().min(1).max(20).default(5),
  maxFiles: z.number().int().min(1).max(10_000).default(1000),
  maxFileBytes: z.number().int().min(1024).max(10_000_000).default(1_000_000),
});

export type RunbookSettings = z.output<typeof runbookSettings>;
