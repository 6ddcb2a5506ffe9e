/**
 * Docker cannot run here, so this reads docker-compose.yml, the Dockerfile and .dockerignore and checks
 * them against what the code expects: processes, port, probes, environment, persistence, scaling.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadEnv, type Need } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';
import { readRepoFile, readYaml, repoFileExists } from './repo-files.js';

const stringList = z.union([z.string().transform((s) => [s]), z.array(z.string())]);
const environment = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
  .default({});

const service = z.looseObject({
  image: z.string().optional(),
  build: z.unknown().optional(),
  command: z.array(z.string()).optional(),
  env_file: stringList.optional(),
  environment,
  ports: z.array(z.string()).default([]),
  volumes: z.array(z.unknown()).default([]),
  healthcheck: z
    .looseObject({ test: z.array(z.string()).optional(), disable: z.boolean().optional() })
    .optional(),
  depends_on: z.record(z.string(), z.looseObject({ condition: z.string() })).optional(),
  profiles: z.array(z.string()).optional(),
  container_name: z.string().optional(),
  stop_grace_period: z.string().optional(),
});
type Service = z.infer<typeof service>;

const compose = z
  .looseObject({
    services: z.record(z.string(), service),
    volumes: z.record(z.string(), z.unknown()).optional(),
  })
  .parse(readYaml('docker-compose.yml'));
const services = compose.services;
const svc = (name: string): Service => {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
};

/** The variables `loadEnv` demands for a process: what it names when given an empty environment. */
function requiredVars(need: Need): string[] {
  try {
    loadEnv({}, { need, envFile: false });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => p.key);
    throw error;
  }
  return [];
}

/** Variables .env.example assigns (the file a user copies to .env). */
const exampleVars = new Set(
  [...readRepoFile('.env.example').matchAll(/^([A-Z0-9_]+)=/gm)].map((m) => m[1] as string),
);

/** The value a service's process sees for `name` ('' when only an env_file could provide it). */
function provided(s: Service, name: string): boolean {
  if (s.environment[name] !== undefined && s.environment[name] !== null) return true;
  return (s.env_file ?? []).includes('.env') && exampleVars.has(name);
}

const seconds = (duration: string | undefined): number => {
  const m = /^(\d+)(ms|s|m)$/.exec(duration ?? '');
  if (!m) return 10; // Docker's default stop timeout
  return Number(m[1]) / (m[2] === 'ms' ? 1000 : m[2] === 'm' ? 1 / 60 : 1);
};

/** A `const NAME = 12_000;` in a source file, so a changed shutdown limit fails this test. */
function sourceConstantMs(path: string, name: string): number {
  const m = new RegExp(`const ${name} = ([\\d_]+);`).exec(readRepoFile(path));
  if (!m) throw new Error(`${name} not found in ${path}`);
  return Number((m[1] as string).replaceAll('_', ''));
}

describe('docker-compose.yml', () => {
  it('defines redis, bot and worker; anything else only behind a profile', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['redis', 'bot', 'worker']));
    const always = Object.entries(services).filter(([, s]) => !s.profiles?.length);
    expect(always.map(([name]) => name).sort()).toEqual(['bot', 'redis', 'worker']);
  });

  it('runs Redis 7 with an fsynced append-only file on a volume, noeviction, and a ping healthcheck', () => {
    const redis = svc('redis');
    expect(redis.image).toMatch(/^redis:7/);
    const command = (redis.command ?? []).join(' ');
    expect(command).toMatch(/^redis-server /);
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--appendfsync everysec');
    expect(command).toContain('--maxmemory-policy noeviction');
    const dataVolume = redis.volumes.find((v) => typeof v === 'string' && v.endsWith(':/data'));
    expect(dataVolume).toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(String(dataVolume).split(':')[0]);
    expect(redis.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
  });

  it('builds one image for the bot and the workers, from the Dockerfile at the root', () => {
    const bot = svc('bot');
    const worker = svc('worker');
    expect(bot.build).toBeDefined();
    expect(worker.build).toEqual(bot.build);
    expect(worker.image).toBe(bot.image);
    expect(bot.build).toMatchObject({ context: '.', target: 'runtime' });
    expect(readRepoFile('Dockerfile')).toMatch(/^FROM .* AS runtime$/m);
  });

  it('starts the compiled bot and worker entry points with plain node (not npm, not tsx)', () => {
    for (const [name, entry] of [
      ['bot', 'dist/bot/main.js'],
      ['worker', 'dist/worker/main.js'],
    ] as const) {
      const command = svc(name).command ?? [];
      expect(command).toEqual(['node', entry]);
      // The build emits dist/<x>.js from src/<x>.ts.
      expect(repoFileExists(entry.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts'))).toBe(true);
    }
  });

  it("publishes the bot's PORT and probes GET /healthz on it", () => {
    const bot = svc('bot');
    const secrets = { SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' };
    // The port the bot listens on inside the container: PORT as set there, read the way the bot reads it.
    const port = loadEnv(
      { ...secrets, PORT: String(bot.environment.PORT) },
      { need: 'bot', envFile: false },
    ).PORT;
    expect(port).toBe(loadEnv(secrets, { need: 'bot', envFile: false }).PORT); // the default, 3000
    expect(port).toBe(3000);
    expect(bot.ports).toEqual([`\${PORT:-3000}:${port}`]);
    const probe = (bot.healthcheck?.test ?? []).join(' ');
    expect(probe).toContain(`http://127.0.0.1:${port}/healthz`);
    expect(readRepoFile('src/bot/health.ts')).toContain("path: '/healthz'");
  });

  it('gives each process every variable its start-up requires, and REDIS_URL pointing at the redis service', () => {
    const needs: Array<[string, Need]> = [
      ['bot', 'bot'],
      ['worker', 'worker'],
    ];
    for (const [name, need] of needs) {
      const s = svc(name);
      const required = requiredVars(need);
      expect(required.length).toBeGreaterThan(0);
      for (const variable of required) expect(provided(s, variable), `${name}: ${variable}`).toBe(true);
      const redisUrl = new URL(String(s.environment.REDIS_URL));
      expect(redisUrl.protocol).toBe('redis:');
      expect(redisUrl.hostname).toBe('redis');
      expect(redisUrl.port).toBe('6379');
      expect(s.depends_on?.redis?.condition).toBe('service_healthy');
    }
    expect(requiredVars('bot').sort()).toEqual(['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET']);
    expect(requiredVars('worker').sort()).toEqual(['OPENAI_API_KEY', 'SLACK_BOT_TOKEN']);
  });

  it('mounts the policy file where LOOPGATE_CONFIG points, read-only, and the runbooks', () => {
    for (const name of ['bot', 'worker']) {
      const s = svc(name);
      const mounts = s.volumes as Array<{ source?: string; target?: string; read_only?: boolean }>;
      const policy = mounts.find((m) => m.source === './loopgate.yaml');
      expect(policy).toMatchObject({ target: s.environment.LOOPGATE_CONFIG, read_only: true });
      expect(mounts.find((m) => m.source === './runbooks')).toMatchObject({
        target: '/app/runbooks',
        read_only: true,
      });
    }
    expect(repoFileExists('loopgate.example.yaml')).toBe(true);
  });

  it('lets workers scale: no container_name and no published ports', () => {
    const worker = svc('worker');
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports).toEqual([]);
    expect(svc('bot').container_name).toBeUndefined();
  });

  it("probes each worker's GET /healthz on the METRICS_PORT it serves, fixed in the service", () => {
    const worker = svc('worker');
    const secrets = { SLACK_BOT_TOKEN: 'xoxb-1', OPENAI_API_KEY: 'k' };
    // The port the worker serves its probes on inside the container, read the way the worker reads it.
    const port = loadEnv(
      { ...secrets, METRICS_PORT: String(worker.environment.METRICS_PORT) },
      { need: 'worker', envFile: false },
    ).METRICS_PORT;
    expect(port).toBe(loadEnv(secrets, { need: 'worker', envFile: false }).METRICS_PORT); // the default
    expect(port).toBeGreaterThan(0);
    expect(worker.healthcheck?.disable).toBeUndefined();
    expect((worker.healthcheck?.test ?? []).join(' ')).toContain(`http://127.0.0.1:${port}/healthz`);
    expect(readRepoFile('src/metrics/http.ts')).toContain("req.url === '/healthz'");
    expect(readRepoFile('src/worker/start.ts')).toContain("portVariable: 'METRICS_PORT'");
  });

  it('waits longer on stop than each process takes to shut down gracefully', () => {
    expect(seconds(svc('worker').stop_grace_period) * 1000).toBeGreaterThan(
      sourceConstantMs('src/worker/start.ts', 'SHUTDOWN_LIMIT_MS'),
    );
    expect(seconds(svc('bot').stop_grace_period) * 1000).toBeGreaterThan(
      sourceConstantMs('src/bot/start.ts', 'BOT_SHUTDOWN_LIMIT_MS'),
    );
  });

  it('puts the bull-board dashboard behind the dashboard profile, on loopback, for the runs queue prefix', () => {
    const dashboard = svc('dashboard');
    expect(dashboard.profiles).toEqual(['dashboard']);
    expect(dashboard.environment.BULL_PREFIX).toBe('{loopgate}');
    expect(dashboard.environment.REDIS_HOST).toBe('redis');
    expect(dashboard.ports.every((p) => p.startsWith('127.0.0.1:'))).toBe(true);
  });
});

/** The Dockerfile as stages of instructions (continuation lines joined, comments dropped). */
function dockerStages(text: string): {
  args: Map<string, string>;
  stages: Array<{ from: string; name: string; lines: string[] }>;
} {
  const lines = text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const args = new Map<string, string>();
  const stages: Array<{ from: string; name: string; lines: string[] }> = [];
  for (const line of lines) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) {
      const image = (from[1] as string).replace(/\$\{(\w+)\}/g, (_, name: string) => args.get(name) ?? '');
      stages.push({ from: image, name: from[2] ?? '', lines: [] });
    } else if (stages.length === 0) {
      const arg = /^ARG\s+(\w+)=(\S+)$/.exec(line);
      if (arg) args.set(arg[1] as string, arg[2] as string);
    } else stages.at(-1)?.lines.push(line);
  }
  return { args, stages };
}

describe('Dockerfile', () => {
  const { stages } = dockerStages(readRepoFile('Dockerfile'));
  const runtime = stages.at(-1);

  it('builds every stage from Node 24 LTS slim (Debian bookworm), the runtime stage last', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages.filter((s) => !stages.some((t) => t.name === s.from))) {
      expect(stage.from).toMatch(/^node:24(\.\d+)*-bookworm-slim$/);
    }
    expect(runtime?.name).toBe('runtime');
  });

  it('installs all dependencies with npm ci in a deps stage, and only production ones for the runtime', () => {
    const deps = stages.find((s) => s.name === 'deps');
    expect(deps?.lines.some((l) => /^RUN .*npm ci(?!.*--omit=dev)/.test(l))).toBe(true);
    const copied = runtime?.lines.find((l) => /^COPY --from=(\S+) \/app\/node_modules/.test(l));
    const source = stages.find((s) => s.name === /--from=(\S+)/.exec(copied ?? '')?.[1]);
    expect(source?.lines.some((l) => /^RUN .*npm ci .*--omit=dev/.test(l))).toBe(true);
    expect(runtime?.lines.some((l) => /npm (ci|install)/.test(l))).toBe(false);
    const pkg = z
      .object({
        dependencies: z.record(z.string(), z.string()),
        devDependencies: z.record(z.string(), z.string()),
      })
      .parse(JSON.parse(readRepoFile('package.json')));
    // tsx is for development only: the image runs compiled JavaScript.
    expect(Object.keys(pkg.dependencies)).not.toContain('tsx');
    expect(Object.keys(pkg.devDependencies)).toContain('tsx');
  });

  it('copies the compiled dist/ from the build stage, the CLI, the example policy and the runbooks', () => {
    const copies = runtime?.lines.filter((l) => l.startsWith('COPY ')).join('\n') ?? '';
    for (const path of ['bin', 'runbooks', 'loopgate.example.yaml']) {
      expect(copies).toMatch(new RegExp(`^COPY ${path.replace('.', '\\.')}\\b`, 'm'));
    }
    expect(copies).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    expect(copies).not.toMatch(/^COPY src\b/m);
    const build = stages.find((s) => s.name === 'build');
    expect(build?.lines).toContain('RUN npm run build');
  });

  it('runs as the non-root node user under tini, with the compiled bot through plain node by default', () => {
    const lines = runtime?.lines ?? [];
    expect(lines.filter((l) => l.startsWith('USER '))).toEqual(['USER node']);
    expect(lines.some((l) => /^RUN apt-get .*install .*\btini\b/.test(l))).toBe(true);
    expect(lines).toContain('ENTRYPOINT ["/usr/bin/tini", "--"]');
    expect(lines).toContain('CMD ["node", "dist/bot/main.js"]');
    expect(lines.find((l) => l.startsWith('HEALTHCHECK '))).toMatch(/\/healthz/);
  });
});

describe('.dockerignore', () => {
  it('keeps secrets, local config and installed modules out of the build context', () => {
    const ignored = readRepoFile('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['.env', 'node_modules', '.git', 'loopgate.yaml']) expect(ignored).toContain(entry);
    for (const needed of ['src', 'bin', 'runbooks', 'examples', 'package.json', 'package-lock.json']) {
      expect(ignored).not.toContain(needed);
    }
  });
});
