/**
 * `run_action` plan steps: a read-only dry-run command or request per action, filled from the call's
 * validated parameters under the action's own rules; its whole output is the plan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPlan, MAX_PLAN_CHARS, planCall } from '../../src/loop/plan.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { runActionSettings } from '../../src/tools/run-action/action-settings.js';
import { createRunAction } from '../../src/tools/run-action.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { parseArgs, toolContext } from './tool-harness.js';

let deploy: HttpFixture;
/** Replicas the fake deploy API's plan endpoint reports now. */
let replicas = 3;

beforeAll(async () => {
  deploy = await startHttpFixture((req, res) => {
    if (req.path.startsWith('/api/plan/scale/')) {
      if (req.headers.authorization !== 'Bearer plan-secret')
        return reply(res, 401, 'text/plain', 'no token');
      return reply(res, 200, 'text/plain', `web: ${replicas} -> ${JSON.parse(req.body).to} replicas`);
    }
    if (req.path === '/api/plan/broken') return reply(res, 503, 'text/plain', 'planner down');
    reply(res, 404, 'text/plain', 'no');
  });
});

afterAll(async () => {
  await deploy.close();
});

/** Prints its arguments (one per line) and exits with `code`: a dry-run whose output we control. */
const printArgs = (code: number) => [
  process.execPath,
  '-e',
  `console.log(process.argv.slice(1).join("\\n")); process.exit(${code})`,
];

function tool(): AnyTool {
  const settings = runActionSettings.parse({
    actions: {
      scale: {
        description: 'Scale web',
        params: { to: { type: 'integer', min: 1, max: 20 } },
        http: { method: 'POST', url: `${deploy.url}/api/scale` },
        plan: {
          http: {
            method: 'POST',
            url: `${deploy.url}/api/plan/scale/web`,
            body: { to: '{to}' },
            headersEnv: { Authorization: 'PLAN_AUTH' },
          },
        },
      },
      rollout: {
        description: 'Roll out a version',
        params: { version: { type: 'string', pattern: '[0-9.]+' } },
        command: ['true'],
        plan: {
          command: [...printArgs(1), '{version}', 'image=web:{version}; echo second'],
          exitCodes: [0, 1],
        },
      },
      strict_diff: {
        description: 'Diff that fails',
        command: ['true'],
        plan: { command: printArgs(2) },
      },
      huge: {
        description: 'Plan too long',
        command: ['true'],
        plan: {
          command: [process.execPath, '-e', `process.stdout.write("x".repeat(${MAX_PLAN_CHARS + 10}))`],
        },
      },
      broken: {
        description: 'Planner down',
        http: { method: 'POST', url: `${deploy.url}/api/x` },
        plan: { http: { method: 'GET', url: `${deploy.url}/api/plan/broken` } },
      },
      restart: { description: 'No plan step', command: ['true'] },
    },
  });
  return createRunAction(settings, { env: { ...process.env, PLAN_AUTH: 'Bearer plan-secret' } });
}

const planOf = (t: AnyTool, args: unknown) => planCall(t, parseArgs(t, args), toolContext(), 5_000);

describe('run_action plan steps', () => {
  it('requests the plan with the filled body and its own secret header; the answer is the plan', async () => {
    const plan = await planOf(tool(), { action: 'scale', params: { to: 5 } });
    expect(plan).toMatchObject({ ok: true, text: 'web: 3 -> 5 replicas' });
  });

  it('compares the plan at execution with the approved one: changed when the world changed', async () => {
    const t = tool();
    const args = parseArgs(t, { action: 'scale', params: { to: 5 } });
    const approved = await planCall(t, args, toolContext(), 5_000);
    expect((await checkPlan(t, args, approved, toolContext(), 5_000)).kind).toBe('same');
    replicas = 4;
    const check = await checkPlan(t, args, approved, toolContext(), 5_000);
    replicas = 3;
    expect(check).toMatchObject({ kind: 'changed', current: { text: 'web: 4 -> 5 replicas' } });
  });

  it('runs a plan command without a shell, accepting the exit codes it declares', async () => {
    const plan = await planOf(tool(), { action: 'rollout', params: { version: '2.0' } });
    // Each filled template is one argument: the `;` reaches the program as text, not a second command.
    expect(plan).toMatchObject({ ok: true, text: '2.0\nimage=web:2.0; echo second\n' });
  });

  it('a plan that exits otherwise, answers non-2xx or is too long fails with the reason', async () => {
    const t = tool();
    expect(await planOf(t, { action: 'strict_diff' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('exited with 2'),
    });
    expect(await planOf(t, { action: 'broken' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('503'),
    });
    expect(await planOf(t, { action: 'huge' })).toMatchObject({
      ok: false,
      error: expect.stringContaining(`at most ${MAX_PLAN_CHARS}`),
    });
  });

  it('an action without a plan step says so, the same each time', async () => {
    expect(await planOf(tool(), { action: 'restart' })).toMatchObject({
      ok: true,
      text: '(action restart declares no plan step)',
    });
  });

  it('declares no plan at all when no action has a plan step', () => {
    const settings = runActionSettings.parse({
      actions: { restart: { description: 'r', command: ['true'] } },
    });
    expect(createRunAction(settings, { env: {} }).plan).toBeUndefined();
  });

  it('refuses a plan step that is not read-only or not filled from declared params', () => {
    const problems = (plan: unknown) => {
      const r = runActionSettings.safeParse({
        actions: { x: { description: 'd', command: ['true'], plan } },
      });
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    expect(problems({ http: { method: 'DELETE', url: 'https://deploy.example/x' } })[0]).toContain(
      'expected GET or POST',
    );
    expect(problems({ command: ['kubectl', 'diff', '{svc}'] })).toEqual([
      'actions.x.plan.command.2: unknown placeholder {svc}: not in params',
    ]);
    expect(problems({ http: { method: 'GET', url: 'https://{svc}.example/x' } })[0]).toContain(
      'fixed scheme, host and port',
    );
    expect(problems({})[0]).toContain('expected exactly one of command or http');
  });
});
