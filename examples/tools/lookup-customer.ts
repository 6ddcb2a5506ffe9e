// A custom loopgate tool: list this file under `custom:` in loopgate.yaml with the CRM's URL prefix under
// `allow:`. See docs/tools.md. A tool in its own package imports from 'loopgate' instead.
import { z } from 'zod';
import { defineTool, ToolInputError } from '../../src/public/index.js';

export default defineTool({
  name: 'lookup_customer',
  description: 'Look up a customer in the CRM by id: name, plan and account status. Read-only.',
  parameters: z.object({
    customerId: z.string().regex(/^cus_[A-Za-z0-9]{4,32}$/).describe('Customer id, like cus_8f2k1'),
  }),
  effect: 'read',
  // Checked at start-up, redacted from logs, read through ctx.secret (never process.env).
  secrets: ['CRM_API_URL', 'CRM_API_TOKEN'],
  timeoutMs: 5_000,
  async execute({ customerId }, ctx) {
    // ctx.http: only URLs under the entry's `allow:` prefixes, aborted with the call (ctx.signal).
    const res = await ctx.http.get(`${ctx.secret('CRM_API_URL')}/customers/${encodeURIComponent(customerId)}`, {
      headers: { authorization: `Bearer ${ctx.secret('CRM_API_TOKEN')}` },
    });
    if (res.status === 404) throw new ToolInputError(`no customer ${customerId}`);
    if (!res.ok) throw new Error(`CRM answered HTTP ${res.status}`);
    const customer = z.object({ name: z.string(), plan: z.string(), status: z.string() }).parse(res.json());
    return { customerId, ...customer };
  },
});
