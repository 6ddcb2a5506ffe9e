/**
 * The simulated world as loopgate's real tools reach it: one HTTP server on 127.0.0.1 (a free port) per
 * trial, serving a status page, health endpoints, logs, deploy history, on-call schedules, alerts, a
 * deploy API, a Prometheus API and a PagerDuty Events API, all over the state in world-state.ts. Slack
 * posts arrive through the `SlackPoster` port instead. Every request is recorded in the state.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { SlackPoster } from '../../tools/ports.js';
import type { WorldSpec } from '../task-schema.js';
import { prometheusAnswer } from './prometheus.js';
import {
  type ActionReply,
  applyDeployAction,
  applyFlag,
  type HttpAnswer,
  healthReply,
  initialState,
  type WorldState,
} from './world-state.js';

interface World {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  state: WorldState;
  slack: SlackPoster;
  close(): Promise<void>;
}

interface Request {
  method: string;
  parts: string[];
  query: Record<string, string>;
  body: string;
}

const json = (status: number, body: unknown): HttpAnswer => ({ status, type: 'application/json', body });
const text = (status: number, body: string): HttpAnswer => ({ status, type: 'text/plain', body });
const fromAction = (reply: ActionReply): HttpAnswer => json(reply.status, reply.body);

/** Answers one request from the spec and the state (changing the state for writes). */
export function route(spec: WorldSpec, state: WorldState, req: Request): HttpAnswer {
  const answer =
    req.method === 'GET'
      ? readRoute(spec, state, req)
      : req.method === 'POST'
        ? writeRoute(spec, state, req)
        : null;
  return answer ?? text(404, `no route for ${req.method} /${req.parts.join('/')}`);
}

/** A GET: null when no route serves it. */
function readRoute(spec: WorldSpec, state: WorldState, req: Request): HttpAnswer | null {
  const [head, a, b, c] = req.parts;
  const env = req.query.env ?? 'prod';
  if (head === 'status' && a === undefined) return json(200, statusPage(spec));
  if (head === 'health' && a) return fromAction(healthReply(state, spec, a, env));
  if (head === 'logs' && a) return logs(spec, a, env, req.query.q);
  if (head === 'deploys' && a) return deploys(spec, a, env);
  if (head === 'oncall' && a) return oncall(spec, a);
  if (head === 'alerts' && a === undefined) return json(200, alerts(spec, state));
  if (head === 'prometheus' && a === 'api' && b === 'v1' && (c === 'query' || c === 'query_range')) {
    return prometheusAnswer(spec, state, c, req.query);
  }
  return null;
}

/** A POST: null when no route serves it. */
function writeRoute(spec: WorldSpec, state: WorldState, req: Request): HttpAnswer | null {
  const [head, a, b] = req.parts;
  const env = req.query.env ?? 'prod';
  if (head === 'alerts' && a && b === 'ack') return ack(state, a, req.query.by);
  if (head === 'api' && (a === 'restart' || a === 'rollback' || a === 'scale') && b) {
    const replicas = req.query.replicas === undefined ? undefined : Number(req.query.replicas);
    return fromAction(applyDeployAction(state, spec, a, { service: b, env, replicas }));
  }
  if (head === 'api' && a === 'flags' && b) {
    return fromAction(applyFlag(state, spec, b, req.query.enabled === 'true'));
  }
  if (head === 'pagerduty' && a === 'v2' && b === 'enqueue') return page(spec, state, req.body);
  return null;
}

function statusPage(spec: WorldSpec) {
  const components = Object.entries(spec.statusPage.components).map(([name, status]) => ({ name, status }));
  return { page: 'Status', components, incidents: spec.statusPage.incidents };
}

function logs(spec: WorldSpec, service: string, env: string, q: string | undefined): HttpAnswer {
  const lines = spec.services[service]?.[env]?.logs;
  if (!lines) return text(404, `no logs for ${service} in ${env}`);
  const wanted = q?.toLowerCase();
  const kept = wanted ? lines.filter((l) => l.toLowerCase().includes(wanted)) : lines;
  return text(200, kept.length > 0 ? kept.join('\n') : '(no matching lines)');
}

function deploys(spec: WorldSpec, service: string, env: string): HttpAnswer {
  const found = spec.services[service]?.[env];
  if (!found) return json(404, { error: `no service ${service} in ${env}` });
  return json(200, { service, env, deploys: found.deploys });
}

function oncall(spec: WorldSpec, team: string): HttpAnswer {
  const found = spec.oncall[team];
  return found ? json(200, { team, ...found }) : json(404, { error: `no on-call schedule for ${team}` });
}

function alerts(spec: WorldSpec, state: WorldState) {
  return { alerts: spec.alerts.map((a) => ({ ...a, acknowledged: state.alerts[a.id]?.acked ?? false })) };
}

function ack(state: WorldState, id: string, by: string | undefined): HttpAnswer {
  const alert = state.alerts[id];
  if (!alert) return json(404, { error: `no alert ${id}` });
  alert.acked = true;
  alert.ackedBy = by ?? null;
  return json(200, { id, acknowledged: true });
}

function page(spec: WorldSpec, state: WorldState, body: string): HttpAnswer {
  let event: { dedup_key?: unknown; payload?: { summary?: unknown; severity?: unknown } };
  try {
    event = JSON.parse(body) as typeof event;
  } catch {
    return json(400, { status: 'invalid event', message: 'body is not JSON' });
  }
  if (spec.pagerdutyStatus >= 300)
    return json(spec.pagerdutyStatus, { status: 'error', message: 'unavailable' });
  const dedupKey = String(event.dedup_key ?? '');
  state.pages.push({
    summary: String(event.payload?.summary ?? ''),
    severity: String(event.payload?.severity ?? ''),
    dedupKey,
  });
  return json(spec.pagerdutyStatus, { status: 'success', message: 'Event processed', dedup_key: dedupKey });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, answer: HttpAnswer): void {
  const body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
  res.writeHead(answer.status, { 'content-type': answer.type });
  res.end(body);
}

/** Starts the world of one trial. */
export async function startWorld(spec: WorldSpec): Promise<World> {
  const state = initialState(spec);
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    readBody(req)
      .then((body) => {
        const url = new URL(req.url ?? '/', 'http://world');
        const request: Request = {
          method: req.method ?? 'GET',
          parts: url.pathname
            .split('/')
            .filter((p) => p !== '')
            .map(decodeURIComponent),
          query: Object.fromEntries(url.searchParams),
          body,
        };
        const answer = route(spec, state, request);
        state.requests.push({
          method: request.method,
          path: url.pathname,
          query: request.query,
          status: answer.status,
        });
        send(res, answer);
      })
      .catch((err: unknown) => {
        if (!res.headersSent) send(res, text(500, `world failed: ${String(err)}`));
      });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  let posted = 0;
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    slack: {
      async postMessage(channel, message) {
        state.posts.push({ channel, text: message });
        posted += 1;
        return { ts: `1700000000.${String(posted).padStart(6, '0')}` };
      },
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
