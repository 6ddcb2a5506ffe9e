import { defineTool } from 'loopgate';
import { z } from 'zod';
import { CRM_SECRETS, type Customer, customerId, getCustomer, plan, setPlan } from './crm.js';

/** Write: waits for the policy (an approver's click), shows a preview on the card, verifies after. */
export const changePlan = defineTool({
  name: 'change_customer_plan',
  description:
    "Change a customer's subscription plan in the CRM (free, pro or enterprise). Needs an approval; " +
    'returns the customer as the CRM has it afterwards.',
  parameters: z.object({ customerId, plan, reason: z.string().min(3).max(200) }),
  effect: 'write',
  secrets: CRM_SECRETS,
  // Setting a plan twice leaves it set once (the CRM also dedupes by the idempotency key).
  idempotent: true,
  timeoutMs: 10_000,
  async preview({ customerId: id, plan: to, reason }, ctx) {
    const now = await getCustomer(ctx, id);
    return `Change *${now.name}* (${id}) from *${now.plan}* to *${to}*\n> ${reason}`;
  },
  async execute({ customerId: id, plan: to }, ctx): Promise<Customer> {
    return setPlan(ctx, id, to);
  },
  async verify({ customerId: id, plan: to }, _result, ctx) {
    const after = await getCustomer(ctx, id);
    return after.plan === to
      ? { ok: true, summary: `${id} is on ${to}` }
      : { ok: false, summary: `${id} is still on ${after.plan}, not ${to}` };
  },
});
