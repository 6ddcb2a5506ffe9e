/**
 * `npm run chat`: a Slack channel in the terminal, played against the real bot and worker processes
 * with the configured model (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL) and the configured policy
 * and tools (LOOPGATE_CONFIG), from the environment or `.env`. Only Slack is stood in. You type as
 * U0YOU; approval cards are decided at the prompt, as whoever you act as (`/as U0XXX`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../src/config/errors.js';
import { loadPolicy } from '../src/config/policy.js';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import {
  approverSummary,
  type ChatConfig,
  overrideFiles,
  readChatConfig,
  SCRIPTED_HINT,
} from './chat/config.js';
import { ChatGroups } from './chat/groups.js';
import { DEFAULT_USER, HELP, runSession } from './chat/session.js';
import { DemoError } from './lib/errors.js';
import { writeDemoPolicy } from './lib/policy-file.js';
import { connectOrExplain } from './lib/redis.js';
import { BOT_USER_ID, type Stage, startStage } from './lib/stage.js';
import { openStageStore } from './lib/store-view.js';
import { onCallScript } from './oncall-model.js';
import { startPaymentsService } from './payments-service.js';

const say = (line = '') => process.stdout.write(`${line}\n`);
const nameOf = (id: string) => (id === BOT_USER_ID ? 'loopgate' : id === DEFAULT_USER ? 'you' : id);

/** No key: the demo's scripted on-call model, its payments service and its policy, in `dir`. */
async function scriptedChat(
  redisUrl: string,
  dir: string,
  closers: (() => Promise<unknown>)[],
): Promise<ChatConfig> {
  say(SCRIPTED_HINT);
  const service = await startPaymentsService();
  closers.push(() => service.close());
  const model = await startFakeOpenAI(onCallScript(1_000));
  closers.push(() => model.close());
  const policyPath = writeDemoPolicy(dir, { SERVICE_URL: service.url });
  return {
    scripted: false,
    model: { apiKey: 'scripted', baseUrl: model.url, name: 'loopgate-demo-script' },
    redisUrl,
    policyPath,
    policy: await loadPolicy(policyPath),
    channel: 'C0LOCALCHAT',
  };
}

async function main(): Promise<number> {
  const read = await readChatConfig(process.env);
  const logDir = mkdtempSync(join(tmpdir(), 'loopgate-chat-'));
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const config = read.scripted ? await scriptedChat(read.redisUrl, logDir, closers) : read;
    return await play(config, logDir);
  } finally {
    for (const close of closers) await close().catch(() => {});
    for (const file of overrideFiles) rmSync(file, { force: true });
  }
}

async function play(config: ChatConfig, logDir: string): Promise<number> {
  const redis = await connectOrExplain(config.redisUrl);
  say(`Starting the bot and a worker (logs in ${logDir})…`);
  let stage: Stage | undefined;
  let ok = false;
  // Until the session handles signals itself: exit, and the processes' groups are killed on the way out.
  const early = () => process.exit(130);
  process.once('SIGINT', early);
  process.once('SIGTERM', early);
  try {
    stage = await startStage({
      redis,
      redisUrl: config.redisUrl,
      policyPath: config.policyPath,
      model: config.model,
      users: { [DEFAULT_USER]: { name: 'you', real_name: 'You' } },
      label: 'chat',
      // Not the working directory: its .env (a SLACK_APP_TOKEN from `loopgate init`) must not reach the
      // processes, which talk to the stand-in Slack; the chat has read .env into their environment.
      cwd: logDir,
      logDir,
      inherit: process.env,
    });
    const groups = new ChatGroups(stage.slack, config.policy);
    const opened = await openStageStore(stage);
    process.off('SIGINT', early);
    process.off('SIGTERM', early);
    try {
      say(`loopgate chat: a stand-in Slack channel <#${config.channel}> with the real bot and worker.`);
      say(`Redis ${config.redisUrl}, keys under ${stage.prefix} (deleted when you quit)`);
      say(
        `model ${config.policy.model.name ?? config.model.name ?? 'gpt-4.1-mini (default)'} at ${config.model.baseUrl ?? 'OpenAI'}; ` +
          `policy ${config.policyPath}`,
      );
      say(`tools: ${Object.keys(config.policy.tools).join(', ') || '(none)'}`);
      for (const line of approverSummary(config.policy)) say(line);
      for (const [group] of groups.list()) say(`${groups.describe(group)}: stand-ins; /group changes them`);
      say(`You are ${DEFAULT_USER}.`);
      say(HELP);
      say();
      await runSession({
        stage,
        store: opened.store,
        policy: config.policy,
        channel: config.channel,
        nameOf,
        input: process.stdin,
        output: process.stdout,
        groups,
      });
    } finally {
      await opened.close();
    }
    ok = true;
    return 0;
  } finally {
    say('Stopping the bot and the worker…');
    await stage?.close();
    await redis.quit().catch(() => {});
    if (ok) rmSync(logDir, { recursive: true, force: true });
    else process.stderr.write(`Logs of the bot and the worker: ${logDir}\n`);
  }
}

try {
  process.exit(await main());
} catch (error) {
  // Configuration problems (a bad .env) and the chat's own explanations are shown without a stack.
  const explained = error instanceof DemoError || error instanceof ConfigError;
  const message = explained ? error.message : String(error instanceof Error ? error.stack : error);
  process.stderr.write(`loopgate chat: ${message}\n`);
  process.exit(1);
}
