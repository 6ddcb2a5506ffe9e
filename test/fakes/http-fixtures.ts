/**
 * A programmable HTTP server on 127.0.0.1 (random port) for tool tests: each request is recorded (method,
 * path with query, lower-cased headers, body text) and answered by the test's handler.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/api/v1/query?query=up`. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type FixtureHandler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface HttpFixture {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  url: string;
  port: number;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startHttpFixture(handler: FixtureHandler): Promise<HttpFixture> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    void (async () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: await readBody(req),
      };
      requests.push(recorded);
      await handler(recorded, res);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** Answers with a status, a content type and a body. */
export function reply(res: ServerResponse, status: number, contentType: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': contentType });
  res.end(body);
}
