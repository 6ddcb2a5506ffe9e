/**
 * A stand-in for Slack's Socket Mode WebSocket endpoint (the URL `apps.connections.open` hands out): it
 * greets a client with `hello`, sends envelopes (`events_api`, `interactive`, `slash_commands`) as Slack
 * does, and resolves each send with the client's acknowledgement (`{ envelope_id, payload? }`).
 * Message shapes as Slack documents them for Socket Mode (api.slack.com, APIs → Socket Mode).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export type EnvelopeType = 'events_api' | 'interactive' | 'slash_commands';

export interface Ack {
  envelope_id: string;
  payload?: unknown;
}

export interface FakeSocketMode {
  /** The `wss://…` URL, here `ws://127.0.0.1:<port>/link/?ticket=…`, a fresh ticket per call. */
  url(): string;
  /** Connections opened so far. */
  connections(): number;
  /** Resolves once a client is connected and greeted. */
  connected(timeoutMs?: number): Promise<void>;
  /** Sends an envelope to the newest connection; resolves with its ack (rejects after `timeoutMs`). */
  send(type: EnvelopeType, payload: unknown, timeoutMs?: number): Promise<Ack>;
  close(): Promise<void>;
}

export async function startFakeSocketMode(appId: string): Promise<FakeSocketMode> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/link/' });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const sockets: WebSocket[] = [];
  const acks = new Map<string, (ack: Ack) => void>();
  const waiting = new Set<() => void>();

  server.on('connection', (socket) => {
    socket.on('message', (data) => {
      const ack = JSON.parse(String(data)) as Ack;
      acks.get(ack.envelope_id)?.(ack);
    });
    socket.send(
      JSON.stringify({
        type: 'hello',
        num_connections: sockets.length + 1,
        debug_info: { host: 'fake-socket-mode', approximate_connection_time: 18060 },
        connection_info: { app_id: appId },
      }),
    );
    sockets.push(socket);
    for (const notify of [...waiting]) notify();
  });

  const within = <T>(promise: Promise<T>, timeoutMs: number, what: string) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`fake Socket Mode: no ${what} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });

  return {
    url: () => `ws://127.0.0.1:${port}/link/?ticket=${randomUUID()}&app_id=${appId}`,
    connections: () => sockets.length,
    connected(timeoutMs = 15_000) {
      if (sockets.length > 0) return Promise.resolve();
      return within(
        new Promise<void>((resolve) => {
          const notify = () => {
            waiting.delete(notify);
            resolve();
          };
          waiting.add(notify);
        }),
        timeoutMs,
        'connection',
      );
    },
    send(type, payload, timeoutMs = 10_000) {
      const socket = sockets.at(-1);
      if (!socket) return Promise.reject(new Error('fake Socket Mode: nobody is connected'));
      const envelopeId = randomUUID();
      const acked = new Promise<Ack>((resolve) => acks.set(envelopeId, resolve));
      socket.send(
        JSON.stringify({
          envelope_id: envelopeId,
          type,
          payload,
          accepts_response_payload: type !== 'events_api',
          ...(type === 'events_api' ? { retry_attempt: 0, retry_reason: '' } : {}),
        }),
      );
      return within(acked, timeoutMs, `ack of ${type} ${envelopeId}`).finally(() => acks.delete(envelopeId));
    },
    async close() {
      for (const socket of sockets) socket.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
