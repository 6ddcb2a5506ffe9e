import { defineTool } from 'loopgate';
import { z } from 'zod';
import { CRM_SECRETS, customerId, getCustomer } from './crm.js';

/** Read: runs without approval. */
export const lookupCustomer = defineTool({
  name: 'lookup_customer',
  description: 'Look up a customer in the CRM by id: name, plan and account status. Read-only.',
  parameters: z.object({ customerId }),
  effect: 'read',
  secrets: CRM_SECRETS,
  timeoutMs: 5_000,
  async execute({ customerId: id }, ctx) {
    const found = await getCustomer(ctx, id);
    ctx.logger.info({ customerId: id }, 'customer looked up');
    return found;
  },
});
