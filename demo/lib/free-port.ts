import { closeSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Ports are picked below Linux's ephemeral range (32768+), so no `listen(0)` and no outgoing connection
// of another process can take one between the pick and the bind, and below the local Redis Cluster's
// ports (20000+, bus ports 30000+). Parallel test files share the range, so each pick is reserved by a
// file created exclusively: two processes never hand out the same port within RESERVED_MS.
const LOW = 10_000;
const HIGH = 19_999;
const RESERVED_MS = 30 * 60_000;
const RESERVATIONS = join(tmpdir(), 'loopgate-port-reservations');

function reserve(port: number): boolean {
  const file = join(RESERVATIONS, String(port));
  try {
    closeSync(openSync(file, 'wx'));
    return true;
  } catch {
    try {
      if (Date.now() - statSync(file).mtimeMs < RESERVED_MS) return false;
      unlinkSync(file);
      closeSync(openSync(file, 'wx'));
      return true;
    } catch {
      return false;
    }
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port free right now on 127.0.0.1 and reserved for this caller. The bot needs a number in PORT
 * (0 is not accepted there), so the port is picked here and bound by the bot a moment later.
 */
export async function freePort(): Promise<number> {
  mkdirSync(RESERVATIONS, { recursive: true });
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (reserve(port) && (await bindable(port))) return port;
  }
  throw new Error(`no free port between ${LOW} and ${HIGH}`);
}
