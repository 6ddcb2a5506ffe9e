// A CRM on 127.0.0.1 for the tests: customers in memory, GET and PATCH /customers/:id, bearer token checked.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeCrm {
  url: string;
  customers: Map<string, { id: string; name: string; plan: string; status: string }>;
  /** PATCH requests received, with their idempotency keys. */
  patches: { id: string; key: string | undefined }[];
  /** The next PATCH is acknowledged but not applied (to see a verify fail). */
  dropNextPatch: boolean;
  close(): Promise<void>;
}

export async function startFakeCrm(token: string): Promise<FakeCrm> {
  const crm: FakeCrm = {
    url: '',
    customers: new Map([['cus_acme1', { id: 'cus_acme1', name: 'Acme', plan: 'pro', status: 'active' }]]),
    patches: [],
    dropNextPatch: false,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    req.on('end', () => {
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.headers.authorization !== `Bearer ${token}`) return send(401, { error: 'unauthorized' });
      const id = /^\/customers\/([^/]+)$/.exec(req.url ?? '')?.[1];
      const found = id ? crm.customers.get(id) : undefined;
      if (!id || !found) return send(404, { error: 'not found' });
      if (req.method === 'GET') return send(200, found);
      if (req.method === 'PATCH') {
        const key = req.headers['idempotency-key'];
        crm.patches.push({ id, key: typeof key === 'string' ? key : undefined });
        const changed = { ...found, plan: (JSON.parse(body) as { plan: string }).plan };
        if (crm.dropNextPatch) crm.dropNextPatch = false;
        else crm.customers.set(id, changed);
        return send(200, changed);
      }
      send(405, { error: 'method not allowed' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  crm.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return crm;
}
