import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { emptyWorkDir, REPO_ROOT, runCli } from './cli-harness.js';

const BIN = join(REPO_ROOT, 'bin/loopgate.js');

const dirs: ReturnType<typeof emptyWorkDir>[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) d.remove();
});
const fresh = () => {
  const d = emptyWorkDir();
  dirs.push(d);
  return d.dir;
};

describe('loopgate init', { timeout: 60_000 }, () => {
  it('lists every missing value at once with --no-input, and writes nothing', async () => {
    const dir = fresh();
    const result = await runCli(['init', '--no-input'], {}, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      [
        'loopgate: invalid configuration in loopgate init:',
        '  SLACK_BOT_TOKEN: required: the Bot User OAuth Token (xoxb-…)',
        "  SLACK_SIGNING_SECRET: required: the app's signing secret",
        '  OPENAI_API_KEY: required: the API key of the model server',
        '  approvers: expected at least one approver (U…, W… or S… id)',
        '',
      ].join('\n'),
    );
    expect(() => readFileSync(join(dir, '.env'))).toThrow();
  });

  it('asks for the app-level token in Socket Mode and refuses a token of the wrong kind', async () => {
    const dir = fresh();
    const base = ['init', '--no-input', '--signing-secret', 's', '--api-key', 'k', '--approvers', 'U0A'];
    const socket = await runCli([...base, '--bot-token', 'xoxb-1'], {}, dir);
    expect(socket.code).toBe(1);
    expect(socket.stderr).toContain('SLACK_APP_TOKEN: required for Socket Mode');
    const wrong = await runCli([...base, '--bot-token', 'xoxp-user-token', '--http'], {}, dir);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('SLACK_BOT_TOKEN: invalid value (a bot token starting with xoxb-)');
  });

  it('--http with a PagerDuty key: values from the environment, page_oncall enabled, check-config green', async () => {
    const dir = fresh();
    const env = {
      SLACK_BOT_TOKEN: 'xoxb-1',
      SLACK_SIGNING_SECRET: 's',
      OPENAI_API_KEY: 'k',
      PD_ROUTING_KEY: 'R0UTE',
    };
    const init = await runCli(
      ['init', '--no-input', '--http', '--approvers', 'U0A', '--channels', 'C0OPS,C0INC'],
      env,
      dir,
    );
    expect(init.stderr).toBe('');
    expect(init.stdout).toContain('HTTP request URLs');
    const dotenv = readFileSync(join(dir, '.env'), 'utf8');
    expect(dotenv).not.toContain('SLACK_APP_TOKEN');
    expect(dotenv).toContain('PD_ROUTING_KEY=R0UTE');
    expect(readFileSync(join(dir, 'loopgate.yaml'), 'utf8')).toContain('routingKeyEnv: PD_ROUTING_KEY');
    // Only .env now: the shell's variables are gone.
    const check = await runCli(['check-config', '--json'], {}, dir);
    expect(check.code, check.stdout).toBe(0);
    const summary = JSON.parse(check.stdout) as { tools: { name: string }[] };
    expect(summary.tools.map((t) => t.name).sort()).toEqual(['current_time', 'page_oncall', 'post_message']);
  });

  it.skipIf(!existsSync('/usr/bin/script'))(
    'asks in a terminal for what no flag gave, keeping lines pasted ahead, and writes plain YAML',
    async () => {
      const dir = fresh();
      const answers = ['xoxb-1', 's', 'xapp-1-a', 'k', '', '', 'U0A,S0SRE', 'C0OPS', ''].join('\n');
      // `script` gives the command a terminal, as a person running it would have.
      const ran = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn('script', ['-qec', `${process.execPath} ${BIN} init`, '/dev/null'], {
          cwd: dir,
          // The sources as they are, not the last build (as test/cli/cli-harness.ts runs them).
          env: { PATH: process.env.PATH ?? '', LOOPGATE_FROM_SOURCE: '1' },
        });
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
        });
        child.on('close', (code) => resolve({ code, out }));
        child.stdin.end(`${answers}\n`);
      });
      expect(ran.code, ran.out).toBe(0);
      expect(ran.out).toContain(
        'Bot User OAuth Token (OAuth & Permissions page, xoxb-…) (not shown as you type): ',
      );
      expect(ran.out).toContain('wrote .env (Socket Mode) and loopgate.yaml');
      const env = readFileSync(join(dir, '.env'), 'utf8');
      expect(env).toContain('SLACK_APP_TOKEN=xapp-1-a');
      const policy = readFileSync(join(dir, 'loopgate.yaml'), 'utf8');
      expect(policy).not.toMatch(/[&*]a\d/);
      expect(policy).toContain('- S0SRE');
      const check = await runCli(['check-config'], {}, dir);
      expect(check.code, check.stderr).toBe(0);
    },
  );

  it.skipIf(!existsSync('/usr/bin/script'))(
    'typed at its question, a secret is not echoed (erase keys work), while ids and URLs are',
    async () => {
      const dir = fresh();
      // Each answer typed once its question shows, as a person would; \x7f is the erase key.
      const answers: Array<[string, string]> = [
        ['Bot User OAuth Token', 'xoxb-typed-SECRET1\r'],
        ['Signing secret', 'sig-SECRETx\x7f2\r'],
        ['App-level token', 'xapp-1-SECRET3\r'],
        ['API key of the model server', 'sk-SECRET4\r'],
        ['Base URL', '\r'],
        ['Model name', 'local-model\r'],
        ['Approvers', 'U0TYPED,S0SRE\r'],
        ['Channel ids', 'C0OPS\r'],
        ['PagerDuty routing key', 'R0UTE-SECRET5\r'],
      ];
      const ran = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn('script', ['-qec', `${process.execPath} ${BIN} init`, '/dev/null'], {
          cwd: dir,
          env: { PATH: process.env.PATH ?? '', LOOPGATE_FROM_SOURCE: '1' },
        });
        let out = '';
        let next = 0;
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const due = answers[next];
          if (due && out.lastIndexOf(due[0]) > out.lastIndexOf('\n', out.length - 2)) {
            next += 1;
            child.stdin.write(due[1]);
          }
        });
        child.on('close', (code) => resolve({ code, out }));
      });
      expect(ran.code, ran.out).toBe(0);
      expect(ran.out).not.toMatch(/SECRET/);
      expect(ran.out).toContain('U0TYPED,S0SRE');
      expect(ran.out).toContain('local-model');
      const env = readFileSync(join(dir, '.env'), 'utf8');
      for (const line of [
        'SLACK_BOT_TOKEN=xoxb-typed-SECRET1',
        'SLACK_SIGNING_SECRET=sig-SECRET2',
        'SLACK_APP_TOKEN=xapp-1-SECRET3',
        'OPENAI_API_KEY=sk-SECRET4',
        'PD_ROUTING_KEY=R0UTE-SECRET5',
      ]) {
        expect(env).toContain(line);
      }
    },
  );
});
