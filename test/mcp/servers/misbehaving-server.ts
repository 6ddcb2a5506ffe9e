/**
 * A stdio MCP server for tests, built with the SDK's low-level Server so its schemas and annotations are
 * exactly what a test needs, good or bad. `tsx misbehaving-server.ts <mode,mode,...> [file]`; every mode
 * adds tools next to `echo` (read-only, always present):
 *   hang        `hang` never answers; a cancel notification for it is appended to `file`
 *   crash       `crash` kills the process in the middle of the call
 *   huge        `huge` answers 10 MB of text
 *   bad-schema  `broken`, whose input schema is not valid JSON Schema, and `has.dot`, a name no model takes
 *   collide     `current_time`, the name of a built-in tool
 *   slow-write  `append_line` (no annotations: a write) notes `started:<line>` in `<file>.started`, then
 *               appends the line to `file` after `holdMs`
 *   schemas     hostile input schemas: `slug` (a pattern that backtracks exponentially in JavaScript),
 *               `keyed` (the same as a patternProperties key), `backref` and `lookahead` (patterns only
 *               a backtracking engine runs), `deep` (nested 40 levels), `big` (over 64 KiB of JSON)
 *   many        30 more read-only tools `t00`..`t29`, each with its own small schema and pattern
 */
import { appendFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const modes = new Set((process.argv[2] ?? '').split(','));
const file = process.argv[3] ?? '';
const holdMs = Number(process.argv[4] ?? '0');

const object = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

const nested = (levels: number): Record<string, unknown> =>
  levels === 0 ? { type: 'string' } : object({ inner: nested(levels - 1) });
const readOnly = (name: string, inputSchema: Record<string, unknown>) => ({
  name,
  description: `The ${name} tool.`,
  inputSchema,
  annotations: { readOnlyHint: true },
});

const tools = [
  {
    name: 'echo',
    description: 'Echoes its text.',
    inputSchema: object({ text: { type: 'string' } }, ['text']),
    annotations: { readOnlyHint: true },
  },
  ...(modes.has('hang')
    ? [
        {
          name: 'hang',
          description: 'Never answers.',
          inputSchema: object({}),
          annotations: { readOnlyHint: true },
        },
      ]
    : []),
  ...(modes.has('crash')
    ? [
        {
          name: 'crash',
          description: 'Dies mid-call.',
          inputSchema: object({}),
          annotations: { readOnlyHint: true },
        },
      ]
    : []),
  ...(modes.has('huge')
    ? [
        {
          name: 'huge',
          description: 'Answers 10 MB.',
          inputSchema: object({}),
          annotations: { readOnlyHint: true },
        },
      ]
    : []),
  ...(modes.has('bad-schema')
    ? [
        { name: 'broken', description: 'Bad schema.', inputSchema: object({ x: { type: 'strang' } }) },
        { name: 'has.dot', description: 'Bad name.', inputSchema: object({}) },
      ]
    : []),
  ...(modes.has('collide')
    ? [
        {
          name: 'current_time',
          description: 'Collides.',
          inputSchema: object({}),
          annotations: { readOnlyHint: true },
        },
      ]
    : []),
  ...(modes.has('slow-write')
    ? [
        {
          name: 'append_line',
          description: 'Appends a line to the file.',
          inputSchema: object({ line: { type: 'string' } }, ['line']),
        },
      ]
    : []),
  ...(modes.has('schemas')
    ? [
        readOnly('slug', object({ slug: { type: 'string', pattern: '^([a-z0-9]+-?)*$' } }, ['slug'])),
        readOnly('keyed', {
          type: 'object',
          patternProperties: { '^([a-z0-9]+-?)*$': { type: 'string' } },
          additionalProperties: false,
        }),
        readOnly('backref', object({ twice: { type: 'string', pattern: '^(a+)\\1$' } })),
        readOnly('lookahead', object({ x: { type: 'string', pattern: '^(?=x)x+$' } })),
        readOnly('deep', nested(40)),
        readOnly('big', object({ pick: { enum: Array.from({ length: 8_000 }, (_, i) => `value-${i}`) } })),
      ]
    : []),
  ...(modes.has('many')
    ? Array.from({ length: 30 }, (_, i) => {
        const name = `t${String(i).padStart(2, '0')}`;
        return readOnly(
          name,
          object(
            {
              id: { type: 'string', pattern: `^${name}-[0-9]{1,6}$` },
              count: { type: 'integer', minimum: 0, maximum: i + 10 },
              mode: { enum: ['a', 'b', name] },
            },
            ['id'],
          ),
        );
      })
    : []),
];

const server = new Server({ name: 'misbehaving', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const args = (request.params.arguments ?? {}) as Record<string, unknown>;
  switch (request.params.name) {
    case 'echo':
      return { content: [{ type: 'text', text: String(args.text) }] };
    case 'slug':
    case 'keyed':
      return { content: [{ type: 'text', text: JSON.stringify(args) }] };
    case 'hang':
      return new Promise(() => {
        extra.signal.addEventListener('abort', () => appendFileSync(file, `cancelled ${extra.requestId}\n`));
      });
    case 'crash':
      setTimeout(() => process.exit(3), 10);
      return new Promise(() => {});
    case 'huge':
      return { content: [{ type: 'text', text: 'x'.repeat(10 * 1024 * 1024) }] };
    case 'append_line':
      appendFileSync(`${file}.started`, `started:${String(args.line)}\n`);
      await new Promise((r) => setTimeout(r, holdMs));
      appendFileSync(file, `${String(args.line)}\n`);
      return { content: [{ type: 'text', text: `appended to ${file}` }] };
    default:
      return { isError: true, content: [{ type: 'text', text: `no tool ${request.params.name}` }] };
  }
});
await server.connect(new StdioServerTransport());
