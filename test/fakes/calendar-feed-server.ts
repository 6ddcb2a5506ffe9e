/**
 * A calendar server as the ones teams publish freeze calendars from (Google's and Outlook's "secret
 * address in iCal format", a CalDAV server's export): GET of a feed path answers `text/calendar`, with the
 * failures those servers give: an HTTP error status, a redirect when a calendar moved, an HTML login page
 * with 200 where a session expired, and silence.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FeedAnswer =
  | { kind: 'calendar'; text: string }
  | { kind: 'status'; status: number }
  | { kind: 'moved'; to: string }
  | { kind: 'login-page' }
  | { kind: 'silent' };

export interface FakeCalendarServer {
  url: string;
  /** The feed at `path` answers this from now on. */
  answer(path: string, answer: FeedAnswer): void;
  /** The paths requested, in order. */
  requests: string[];
  close(): Promise<void>;
}

export async function startFakeCalendarServer(): Promise<FakeCalendarServer> {
  const answers = new Map<string, FeedAnswer>();
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    requests.push(path);
    const answer = answers.get(path) ?? { kind: 'status', status: 404 };
    switch (answer.kind) {
      case 'calendar':
        res.writeHead(200, { 'content-type': 'text/calendar; charset=utf-8' }).end(answer.text);
        return;
      case 'status':
        res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(`${answer.status}`);
        return;
      case 'moved':
        res.writeHead(301, { location: answer.to }).end();
        return;
      case 'login-page':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Sign in</title>');
        return;
      case 'silent':
        return; // never answers; the client's time limit ends it
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answer: (path, answer) => answers.set(path, answer),
    requests,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
