/**
 * loopgate against a real llama.cpp server (its chat template, tool grammar, tool-call parser, streaming
 * and usage reporting): starts `llama-server` with the GGUF you point it at, runs `loopgate model check`'s
 * checkModel with the eval suite's tools, then three read-only eval tasks, and prints the results. Not
 * part of `npm test`. Pass rates mean nothing with stand-in weights; wire compatibility does.
 *
 *   npx tsx bench/llama-server.ts --gguf puppet.gguf [--server path/to/llama-server] [--alias puppet]
 *     [--template file.jinja] [--logit-bias 1+20,151645+25] [--port 8089] [--tasks a,b,c]
 *     [--build --scratch DIR]   (build llama-server first, ~15 min on 2 cores; see
 *                                ../shared/tools/llama-stand-in/README.md for the recipe)
 *
 * The server is found at --server, else $LLAMA_SERVER, else <scratch>/llama.cpp/build/bin/llama-server.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { parsePolicy } from '../src/config/policy.js';
import { secretNames } from '../src/config/policy-env.js';
import { checkModel, modelCheckText } from '../src/doctor/model-check.js';
import { evalMain } from '../src/eval/cli.js';
import { fillPlaceholders } from '../src/eval/merge.js';
import { buildTools } from '../src/tools/registry.js';

const { values } = parseArgs({
  options: {
    gguf: { type: 'string' },
    server: { type: 'string' },
    scratch: { type: 'string', default: process.env.LLAMA_SCRATCH ?? '/work/scratch' },
    build: { type: 'boolean', default: false },
    alias: { type: 'string', default: 'puppet' },
    template: { type: 'string' },
    'logit-bias': { type: 'string', default: '1+20,151645+25' },
    port: { type: 'string', default: '8089' },
    context: { type: 'string', default: '16384' },
    threads: { type: 'string', default: '2' },
    tasks: { type: 'string', default: 'who-is-oncall,deploy-history,status-page-all-clear' },
    'timeout-ms': { type: 'string', default: '300000' },
  },
});
if (!values.gguf) {
  console.error(
    '--gguf <model.gguf> is required (make one with ../shared/tools/llama-stand-in/make_puppet.py)',
  );
  process.exit(2);
}
const scratch = resolve(values.scratch);
const llamaDir = join(scratch, 'llama.cpp');

if (values.build) {
  // The recipe of ../shared/tools/llama-stand-in/README.md, at the lowest priority.
  const run = (cmd: string, cwd: string) => {
    console.log(`$ ${cmd}`);
    const r = spawnSync('bash', ['-c', cmd], { cwd, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`failed: ${cmd}`);
  };
  run(
    'mkdir -p nlc && cd nlc && npm init -y >/dev/null && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm i -E --omit=optional --ignore-scripts node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1',
    scratch,
  );
  if (!existsSync(llamaDir))
    run('git clone -q nlc/node_modules/node-llama-cpp/llama/gitRelease.bundle llama.cpp', scratch);
  run(
    'cmake -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF && nice -n 19 cmake --build build --target llama-server -j2',
    llamaDir,
  );
}

const server = values.server ?? process.env.LLAMA_SERVER ?? join(llamaDir, 'build/bin/llama-server');
if (!existsSync(server)) {
  console.error(`no llama-server at ${server}: pass --server, set LLAMA_SERVER, or add --build`);
  process.exit(2);
}
const template = values.template ?? join(llamaDir, 'models/templates/Qwen-Qwen2.5-7B-Instruct.jinja');
const args = [
  ...['-m', resolve(values.gguf), '--alias', values.alias, '--jinja'],
  ...(existsSync(template) ? ['--chat-template-file', template] : []),
  ...[
    '-c',
    values.context,
    '--parallel',
    '1',
    '-t',
    values.threads,
    '--host',
    '127.0.0.1',
    '--port',
    values.port,
  ],
  ...(values['logit-bias'] ? ['--logit-bias', values['logit-bias']] : []),
];
console.log(`$ ${server} ${args.join(' ')}`);
const child = spawn(server, args, { stdio: ['ignore', 'ignore', 'pipe'] });
let serverLog = '';
child.stderr.on('data', (d) => {
  serverLog = (serverLog + String(d)).slice(-20_000);
});
const base = `http://127.0.0.1:${values.port}`;
const stop = () => {
  if (child.exitCode === null) child.kill('SIGTERM');
};
process.on('exit', stop);

try {
  // Bounded polling of /health until the model is loaded.
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`llama-server exited (${child.exitCode}):\n${serverLog.slice(-3000)}`);
    const ok = await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error('llama-server did not become healthy within 180 s');
    await new Promise((r) => setTimeout(r, 500));
  }
  console.log(`llama-server healthy at ${base}`);

  const policyPath = resolve('eval/suites/oncall/policy.yaml');
  const raw = fillPlaceholders(parseYaml(await readFile(policyPath, 'utf8')) ?? {}, {
    WORLD: 'http://127.0.0.1:9',
    RUNBOOKS: resolve(dirname(policyPath), 'runbooks'),
  });
  const secrets = Object.fromEntries(secretNames(raw).map((n) => [n, 'stand-in']));
  const policy = parsePolicy(JSON.stringify(raw), { env: secrets, baseDir: dirname(policyPath) });
  const tools = await buildTools(policy, {
    env: secrets,
    slack: { postMessage: async () => ({ ts: '1.0' }) },
  } as never);
  const env = {
    OPENAI_API_KEY: 'local',
    OPENAI_BASE_URL: `${base}/v1`,
    OPENAI_MODEL: values.alias,
    OPENAI_TIMEOUT_MS: values['timeout-ms'],
    OPENAI_MAX_RETRIES: '0',
  };
  console.log('\n== loopgate model check (eval suite tools) ==');
  const report = await checkModel({
    env: { ...env, OPENAI_TIMEOUT_MS: Number(env.OPENAI_TIMEOUT_MS), OPENAI_MAX_RETRIES: 0 },
    policy,
    tools,
  });
  console.log(modelCheckText(report));

  console.log(`\n== eval: ${values.tasks} ==`);
  const out = await mkdtemp(join(tmpdir(), 'loopgate-llama-eval-'));
  const code = await evalMain(
    [
      ...['--model', values.alias, '--price', `${values.alias}=0,0`, '--trials', '1', '--concurrency', '1'],
      ...['--tasks', values.tasks, '--out', out, '--fresh'],
    ],
    { stdout: { write: (t: string) => process.stdout.write(t), isTTY: false }, stderr: process.stderr, env },
  );
  const records = (await readFile(join(out, 'results.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  for (const r of records) {
    const m = r.metrics;
    console.log(
      `${r.task}: passed=${r.passed} stop=${m.stopReason} steps=${m.steps} tokens in=${m.inputTokens} cached=${m.cachedInputTokens} out=${m.outputTokens} wall=${(m.wallMs / 1000).toFixed(1)}s${r.error ? ` error=${r.error}` : ''}`,
    );
  }
  const logText = await readFile(join(out, 'eval.log'), 'utf8').catch(() => '');
  const refused = logText.split('\n').filter((l) => l.includes('refused the'));
  if (refused.length > 0)
    console.log(`schema fallback logged ${refused.length} time(s): ${JSON.parse(refused[0]!).msg}`);
  process.exitCode = code;
} finally {
  stop();
}
