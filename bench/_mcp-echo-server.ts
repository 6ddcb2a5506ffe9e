/** The MCP server of bench/mcp-call.ts: one read-only `echo` tool that reports its own handler time. */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new Server({ name: 'bench-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'echo',
      description: 'Echoes its text.',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string', maxLength: 1000 }, n: { type: 'integer' } },
        required: ['text'],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: true },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const started = performance.now();
  const text = String(request.params.arguments?.text ?? '');
  const ms = performance.now() - started;
  return { content: [{ type: 'text', text }], structuredContent: { text, serverMs: ms } };
});
await server.connect(new StdioServerTransport());
