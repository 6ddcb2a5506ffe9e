// A custom loopgate tool: list this file under `custom:` in loopgate.yaml. See docs/tools.md.
import { z } from 'zod';
import { defineTool } from '../../src/loop/define-tool.js';

export default defineTool({
  name: 'lookup_customer',
  description: 'Look up a customer in the CRM by id: name, plan and account status. Read-only.',
  parameters: z.object({
    customerId: z.string().regex(/^cus_[A-Za-z0-9]{4,32}$/).describe('Customer id, like cus_8f2k1'),
  }),
  effect: 'read',
  timeoutMs: 5_000,
  async execute({ customerId }, ctx) {
    const base = process.env.CRM_API_URL ?? 'https://crm.internal.example';
    const res = await fetch(`${base}/customers/${encodeURIComponent(customerId)}`, {
      headers: { authorization: `Bearer ${process.env.CRM_API_TOKEN ?? ''}` },
      signal: ctx.signal, // aborted at the tool's timeout: always pass it on
    });
    if (res.status === 404) throw new Error(`no customer ${customerId}`);
    if (!res.ok) throw new Error(`CRM answered HTTP ${res.status}`);
    const customer = z.object({ name: z.string(), plan: z.string(), status: z.string() }).parse(await res.json());
    return { customerId, ...customer };
  },
});
