/**
 * A minimal OpenAI-compatible server for the step benches, so the fake's own work weighs little in the
 * gaps: the arrival is taken when the request's headers are parsed, the reply time when it is handed to
 * the socket. Reads (tool `noop`) until the conversation holds `steps` tool results, then answers.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Per run: when each request arrived and when each reply was handed to the socket. */
export interface Timing {
  arrived: number[];
  replied: number[];
}

export interface MinimalModel {
  url: string;
  /** The current run's timing; `reset()` starts a new one. */
  timing: Timing;
  reset(): void;
  close(): Promise<void>;
}

export async function startMinimalModel(steps: number): Promise<MinimalModel> {
  let n = 0;
  const server = createServer((req, res) => {
    model.timing.arrived.push(performance.now());
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: { role: string }[] };
      const results = body.messages.filter((m) => m.role === 'tool').length;
      n++;
      const message =
        results < steps
          ? {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: `call_${n}`,
                  type: 'function',
                  function: { name: 'noop', arguments: `{"n":${results + 1}}` },
                },
              ],
            }
          : { role: 'assistant', content: 'done' };
      const reply = JSON.stringify({
        id: `chatcmpl-${n}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: 'bench',
        choices: [
          { index: 0, message, finish_reason: results < steps ? 'tool_calls' : 'stop', logprobs: null },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
      res.end(reply);
      model.timing.replied.push(performance.now());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const model: MinimalModel = {
    url: `http://127.0.0.1:${port}/v1`,
    timing: { arrived: [], replied: [] },
    reset() {
      model.timing = { arrived: [], replied: [] };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return model;
}
