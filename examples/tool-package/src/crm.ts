// The CRM's API as both tools see it: its base URL and token are declared secrets, every request goes
// through ctx.http (the operator's allowlist and loopgate's SSRF guard), and answers are checked with zod.
import { type ToolContext, ToolInputError, TransientToolError } from 'loopgate';
import { z } from 'zod';

export const CRM_SECRETS = ['CRM_API_URL', 'CRM_API_TOKEN'] as const;

export const customerId = z
  .string()
  .regex(/^cus_[A-Za-z0-9]{4,32}$/)
  .describe('Customer id, like cus_8f2k1');

export const plan = z.enum(['free', 'pro', 'enterprise']);

export const customer = z.object({ id: z.string(), name: z.string(), plan, status: z.string() });
export type Customer = z.infer<typeof customer>;

function url(ctx: ToolContext, id: string): string {
  return `${ctx.secret('CRM_API_URL')}/customers/${encodeURIComponent(id)}`;
}

const auth = (ctx: ToolContext) => ({ authorization: `Bearer ${ctx.secret('CRM_API_TOKEN')}` });

/** Throws what the model should read: an unknown id is its mistake, a 5xx is worth another try. */
function failOn(status: number, id: string): void {
  if (status === 404) throw new ToolInputError(`no customer ${id}`);
  if (status >= 500) throw new TransientToolError(`the CRM answered HTTP ${status}`);
  if (status >= 300) throw new Error(`the CRM answered HTTP ${status}`);
}

export async function getCustomer(ctx: ToolContext, id: string): Promise<Customer> {
  const res = await ctx.http.get(url(ctx, id), { headers: auth(ctx) });
  failOn(res.status, id);
  return customer.parse(res.json());
}

export async function setPlan(ctx: ToolContext, id: string, to: z.infer<typeof plan>): Promise<Customer> {
  const res = await ctx.http.request(url(ctx, id), {
    method: 'PATCH',
    headers: { ...auth(ctx), 'idempotency-key': ctx.idempotencyKey },
    body: { plan: to },
  });
  failOn(res.status, id);
  return customer.parse(res.json());
}
