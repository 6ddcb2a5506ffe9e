/**
 * The simulated world's state and how actions change it: plain data and pure functions, so the HTTP
 * fakes stay thin and the graders read the same object. `snapshot` is what criteria and minefields see.
 */
import type { ServiceEnvSpec, WorldSpec } from '../task-schema.js';

interface ServiceState {
  health: 'ok' | 'degraded' | 'down';
  version: string;
  previousVersion: string | undefined;
  replicas: number;
  restarts: number;
  rollbacks: number;
  scales: number;
  /** Health checks answered so far (a flaky service answers its `healthSequence` first). */
  healthChecks: number;
}

interface Page {
  summary: string;
  severity: string;
  dedupKey: string;
}

interface Post {
  channel: string;
  text: string;
}

interface WorldRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  status: number;
}

export interface WorldState {
  services: Record<string, Record<string, ServiceState>>;
  flags: Record<string, boolean>;
  alerts: Record<string, { acked: boolean; ackedBy: string | null }>;
  pages: Page[];
  posts: Post[];
  /** Every HTTP request the world answered, in order. */
  requests: WorldRequest[];
  prometheusQueries: number;
}

export function initialState(spec: WorldSpec): WorldState {
  const services: WorldState['services'] = {};
  for (const [service, envs] of Object.entries(spec.services)) {
    services[service] = {};
    for (const [env, s] of Object.entries(envs)) {
      services[service][env] = {
        health: s.health,
        version: s.version,
        previousVersion: s.previousVersion,
        replicas: s.replicas,
        restarts: 0,
        rollbacks: 0,
        scales: 0,
        healthChecks: 0,
      };
    }
  }
  return {
    services,
    flags: { ...spec.flags },
    alerts: Object.fromEntries(spec.alerts.map((a) => [a.id, { acked: false, ackedBy: null }])),
    pages: [],
    posts: [],
    requests: [],
    prometheusQueries: 0,
  };
}

type DeployAction = 'restart' | 'rollback' | 'scale';

/** What the world's HTTP server sends: a status, a content type and a body (text, or JSON to serialise). */
export interface HttpAnswer {
  status: number;
  type: string;
  body: unknown;
}

/** The outcome of a deploy API call: the HTTP answer, the state changed in place. */
export interface ActionReply {
  status: number;
  body: Record<string, unknown>;
}

/** Whether the service's fault is repaired by what just happened. */
function repairs(spec: ServiceEnvSpec, action: DeployAction | `flag:${string}`): boolean {
  return spec.fixedBy.includes(action);
}

/** Restart, roll back or scale `service` in `env`, as the deploy API would. */
export function applyDeployAction(
  state: WorldState,
  spec: WorldSpec,
  action: DeployAction,
  target: { service: string; env: string; replicas?: number },
): ActionReply {
  const svc = state.services[target.service]?.[target.env];
  const svcSpec = spec.services[target.service]?.[target.env];
  if (!svc || !svcSpec) {
    return { status: 404, body: { error: `no service ${target.service} in ${target.env}` } };
  }
  const failing = svcSpec.failing[action];
  if (failing !== undefined) {
    return {
      status: failing,
      body: { error: `${action} of ${target.service} failed: deploy agent unavailable` },
    };
  }
  if (action === 'restart') svc.restarts += 1;
  if (action === 'rollback') {
    if (!svc.previousVersion) return { status: 409, body: { error: 'no previous version to roll back to' } };
    svc.rollbacks += 1;
    [svc.version, svc.previousVersion] = [svc.previousVersion, svc.version];
  }
  if (action === 'scale') {
    if (target.replicas === undefined) return { status: 400, body: { error: 'replicas is required' } };
    svc.scales += 1;
    const grew = target.replicas > svc.replicas;
    svc.replicas = target.replicas;
    if (!grew)
      return { status: 200, body: { service: target.service, env: target.env, replicas: svc.replicas } };
  }
  if (repairs(svcSpec, action)) svc.health = 'ok';
  return {
    status: 200,
    body: { service: target.service, env: target.env, action, version: svc.version, replicas: svc.replicas },
  };
}

/** Sets a feature flag; turning off a flag that a service's fault depends on repairs it. */
export function applyFlag(state: WorldState, spec: WorldSpec, flag: string, enabled: boolean): ActionReply {
  if (!(flag in state.flags)) return { status: 404, body: { error: `no flag ${flag}` } };
  state.flags[flag] = enabled;
  if (!enabled) {
    for (const [service, envs] of Object.entries(spec.services)) {
      for (const [env, s] of Object.entries(envs)) {
        const svc = state.services[service]?.[env];
        if (svc && repairs(s, `flag:${flag}`)) svc.health = 'ok';
      }
    }
  }
  return { status: 200, body: { flag, enabled } };
}

/** The health endpoint's answer; each call counts (a flaky service answers its sequence first). */
export function healthReply(state: WorldState, spec: WorldSpec, service: string, env: string): ActionReply {
  const svc = state.services[service]?.[env];
  const svcSpec = spec.services[service]?.[env];
  if (!svc || !svcSpec) return { status: 404, body: { error: `no service ${service} in ${env}` } };
  const scripted = svcSpec.healthSequence[svc.healthChecks];
  svc.healthChecks += 1;
  if (scripted !== undefined && scripted >= 500) {
    return { status: scripted, body: { error: 'upstream unavailable, try again' } };
  }
  const healthy = svc.health === 'ok';
  const checks = healthy ? (svcSpec.healthyChecks ?? okChecks(svcSpec.checks)) : svcSpec.checks;
  return {
    status: healthy ? 200 : 503,
    body: { service, env, status: svc.health, version: svc.version, replicas: svc.replicas, checks },
  };
}

function okChecks(checks: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(checks).map((k) => [k, 'ok']));
}

/** Reads a dotted path (`services.payments.prod.restarts`, `pages.length`, `posts.0.text`). */
export function readPath(value: unknown, path: string): unknown {
  let current: unknown = value;
  for (const part of path.split('.')) {
    if (current === null || current === undefined) return undefined;
    if (part === 'length' && (Array.isArray(current) || typeof current === 'string')) {
      current = current.length;
      continue;
    }
    if (typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** A deep copy of the state as graders see it. */
export function snapshot(state: WorldState): WorldState {
  return structuredClone(state);
}
