/** read `read_runbook`: a runbook file, or one section of it by heading, with line numbers. */
import { z } from 'zod';
import { defineTool } from '../loop/define-tool.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { ToolError } from './errors.js';
import {
  findHeading,
  headings,
  type LineRange,
  sectionRange,
  splitLines,
} from './runbooks/markdown-sections.js';
import { readRunbookFile } from './runbooks/runbook-files.js';
import type { RunbookSettings } from './runbooks/runbook-settings.js';

/** Lines returned by one call; the model pages on with `fromLine`. */
const MAX_LINES = 200;

function numbered(lines: readonly string[], range: LineRange): string {
  const width = String(range.to).length;
  return lines
    .slice(range.from - 1, range.to)
    .map((text, i) => `${String(range.from + i).padStart(width)} | ${text}`)
    .join('\n');
}

export function createReadRunbook(settings: RunbookSettings): AnyTool {
  return defineTool({
    name: 'read_runbook',
    description:
      'Read a runbook found by search_runbooks: the whole file or one section (by its heading, with its ' +
      `subsections), with line numbers, at most ${MAX_LINES} lines per call (use fromLine to continue).`,
    parameters: z.object({
      path: z
        .string()
        .min(1)
        .describe('Runbook path as search_runbooks printed it, e.g. payments/latency.md'),
      section: z.string().optional().describe('Heading of the section to read, without the # marks'),
      fromLine: z.number().int().min(1).optional().describe('First line to show (to continue a long read)'),
    }),
    effect: 'read',
    idempotent: true,
    async execute({ path, section, fromLine }) {
      const file = await readRunbookFile(settings.dir, path, settings);
      const lines = splitLines(file.text);
      let range: LineRange = { from: 1, to: lines.length };
      let title = file.path;
      if (section !== undefined) {
        const all = headings(lines);
        const heading = findHeading(all, section);
        if (!heading) {
          const known = all.map((h) => `${'#'.repeat(h.level)} ${h.title}`).join('; ');
          throw new ToolError(
            'section_not_found',
            `${file.path} has no section "${section}"; its headings: ${known || '(none)'}`,
          );
        }
        range = sectionRange(all, heading, lines.length);
        title = `${file.path} § ${heading.title}`;
      }
      const from = Math.max(range.from, fromLine ?? range.from);
      if (from > range.to) {
        throw new ToolError(
          'line_out_of_range',
          `${title} ends at line ${range.to}; fromLine ${from} is past it`,
        );
      }
      const to = Math.min(range.to, from + MAX_LINES - 1);
      const more = to < range.to ? `\n… ${range.to - to} more lines: call again with fromLine=${to + 1}` : '';
      return `${title} (lines ${from}-${to} of ${lines.length})\n${numbered(lines, { from, to })}${more}`;
    },
  });
}
