/** read `search_runbooks`: ranked matches in the Markdown runbooks, as `file:line` snippets. */
import { z } from 'zod';
import { defineTool } from '../loop/define-tool.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { listRunbooks } from './runbooks/runbook-files.js';
import { type SearchHit, searchRunbooks } from './runbooks/runbook-search.js';
import type { RunbookSettings } from './runbooks/runbook-settings.js';

function render(hits: readonly SearchHit[], query: string): string {
  if (hits.length === 0) {
    return `No runbook matches "${query}". Try other words (a service name, a symptom, an alert name).`;
  }
  const parts = hits.map((hit, i) => {
    const head = `${i + 1}. ${hit.path}:${hit.range.from} — ${hit.title} (lines ${hit.range.from}-${hit.range.to})`;
    return [head, ...hit.lines.map((l) => `   ${hit.path}:${l.line}: ${l.text}`)].join('\n');
  });
  return `${parts.join('\n')}\n\nRead a whole section with read_runbook (path and section heading).`;
}

export function createSearchRunbooks(settings: RunbookSettings): AnyTool {
  return defineTool({
    name: 'search_runbooks',
    description:
      "Search the team's Markdown runbooks (procedures for alerts, incidents, deploys) by keywords. " +
      'Returns the best-matching sections as path:line with the matching lines. Use read_runbook next ' +
      'to read a section in full before following it.',
    parameters: z.object({
      query: z.string().min(1).max(300).describe('Keywords: service, symptom, alert or error text'),
    }),
    effect: 'read',
    idempotent: true,
    async execute({ query }) {
      const files = await listRunbooks(settings.dir, settings);
      return render(searchRunbooks(files, query, settings.maxResults), query);
    },
  });
}
