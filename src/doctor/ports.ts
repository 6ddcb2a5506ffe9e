/** The ports loopgate's processes listen on, free to bind on this host? */
import { createServer } from 'node:net';
import { type CheckResult, fail, ok, warn } from './types.js';

interface PortToCheck {
  variable: string;
  port: number;
  serves: string;
}

function tryListen(port: number): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    server.listen(port, () => server.close(() => resolve(null)));
  });
}

export async function portChecks(ports: readonly PortToCheck[]): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const { variable, port, serves } of ports) {
    const name = `port ${variable}=${port}`;
    if (port === 0) {
      results.push(ok(name, `0: ${serves} not served`));
      continue;
    }
    const error = await tryListen(port);
    if (error === null) results.push(ok(name, `free (${serves})`));
    else if (error.code === 'EADDRINUSE') {
      results.push(
        warn(
          name,
          `in use on this host (a loopgate already running here?); ${serves} needs it, or set ${variable}`,
        ),
      );
    } else results.push(fail(name, `cannot listen (${error.code ?? error.message}); set ${variable}`));
  }
  return results;
}
