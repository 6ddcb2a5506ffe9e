/** The simulated world: its state changes, and what loopgate's real tools see of it. */
import { describe, expect, it } from 'vitest';
import { worldSpec } from '../../src/eval/task-schema.js';
import { route } from '../../src/eval/world/world-server.js';
import {
  applyDeployAction,
  applyFlag,
  healthReply,
  initialState,
  readPath,
} from '../../src/eval/world/world-state.js';
import { play } from './support.js';

const spec = worldSpec.parse({
  services: {
    search: { prod: { health: 'degraded', replicas: 3, fixedBy: ['scale'], healthSequence: [503] } },
    checkout: { prod: { health: 'degraded', fixedBy: ['flag:checkout_v2'], failing: { rollback: 502 } } },
  },
  flags: { checkout_v2: true },
});

describe('the world state', () => {
  it('repairs a service only by what fixes it', () => {
    const state = initialState(spec);
    expect(
      applyDeployAction(state, spec, 'scale', { service: 'search', env: 'prod', replicas: 2 }).status,
    ).toBe(200);
    expect(state.services.search?.prod?.health).toBe('degraded');
    applyDeployAction(state, spec, 'scale', { service: 'search', env: 'prod', replicas: 6 });
    expect(state.services.search?.prod).toMatchObject({ health: 'ok', replicas: 6, scales: 2 });
    expect(applyDeployAction(state, spec, 'restart', { service: 'checkout', env: 'prod' }).status).toBe(200);
    expect(state.services.checkout?.prod?.health).toBe('degraded');
    applyFlag(state, spec, 'checkout_v2', false);
    expect(state.services.checkout?.prod?.health).toBe('ok');
  });

  it('answers a failing action with its status and changes nothing', () => {
    const state = initialState(spec);
    expect(applyDeployAction(state, spec, 'rollback', { service: 'checkout', env: 'prod' })).toMatchObject({
      status: 502,
    });
    expect(state.services.checkout?.prod?.rollbacks).toBe(0);
  });

  it('answers a flaky health endpoint with its sequence first, counting every check', () => {
    const state = initialState(spec);
    expect(healthReply(state, spec, 'search', 'prod').status).toBe(503);
    expect(healthReply(state, spec, 'search', 'prod')).toMatchObject({
      status: 503,
      body: { status: 'degraded' },
    });
    expect(state.services.search?.prod?.healthChecks).toBe(2);
  });

  it('answers unknown routes with 404', () => {
    const state = initialState(spec);
    const answer = route(spec, state, {
      method: 'DELETE',
      parts: ['api', 'restart', 'search'],
      query: {},
      body: '',
    });
    expect(answer).toMatchObject({ status: 404, body: 'no route for DELETE /api/restart/search' });
  });

  it('reads dotted paths, list lengths and indexes', () => {
    const state = initialState(spec);
    state.pages.push({ summary: 's', severity: 'critical', dedupKey: 'k' });
    expect(readPath(state, 'pages.length')).toBe(1);
    expect(readPath(state, 'pages.0.severity')).toBe('critical');
    expect(readPath(state, 'services.search.prod.replicas')).toBe(3);
    expect(readPath(state, 'services.nope.prod.replicas')).toBeUndefined();
  });
});

describe('the world through the real tools', () => {
  it("lets the engine's read retries ride out a flaky health endpoint", async () => {
    const { transcript, record } = await play('flaky-health');
    expect(transcript.toolRetries).toBe(2);
    expect(transcript.world.services.payments?.prod?.healthChecks).toBe(3);
    expect(record.passed).toBe(true);
  });

  it('records the deploy API refusing a restart, and the action as failed', async () => {
    const { transcript, record } = await play('restart-fails');
    expect(transcript.world.requests).toContainEqual({
      method: 'POST',
      path: '/api/restart/payments',
      query: { env: 'prod' },
      status: 500,
    });
    expect(transcript.calls.map((c) => [c.tool, c.outcome, c.executed])).toEqual([
      ['run_action', 'failed', true],
    ]);
    expect(record.passed).toBe(true);
  });
});
