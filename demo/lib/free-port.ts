import { createServer } from 'node:net';

/**
 * A TCP port free right now on 127.0.0.1. The bot needs a number in PORT (0 is not accepted there), so
 * the port is picked here and bound by the bot a moment later.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port')),
      );
    });
  });
}
