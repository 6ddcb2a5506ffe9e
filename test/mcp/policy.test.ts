/** The policy's `mcp:` section: shapes, key paths in errors, secrets by name, approvers, paths. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { enabledGatedTools, parsePolicy } from '../../src/config/policy.js';
import { configuredSecrets } from '../../src/config/policy-env.js';
import { approversFor } from '../../src/config/policy-limits.js';

const problems = (yaml: string, env: Record<string, string> = {}) => {
  try {
    parsePolicy(yaml, { env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('policy mcp.servers', () => {
  it('accepts a stdio and an HTTP server with their overrides, filling the defaults', () => {
    const policy = parsePolicy(
      [
        'approvals: { approvers: [U0MGR] }',
        'mcp:',
        '  servers:',
        '    fs:',
        '      command: [./bin/fs-server, --root]',
        '      args: [/srv]',
        '      cwd: work',
        '      envFromEnv: { TOKEN: FS_TOKEN }',
        '      tools: { write_file: { approvers: [S0SRE], idempotent: true, timeoutSeconds: 5 } }',
        '    web:',
        '      url: https://mcp.internal.example/mcp',
        '      headersEnv: { Authorization: WEB_AUTH }',
        '      trustAnnotations: false',
        '      deny: [drop_table]',
      ].join('\n'),
      { env: { FS_TOKEN: 'x', WEB_AUTH: 'y' }, baseDir: '/etc/loopgate' },
    );
    expect(policy.mcp?.servers.fs).toMatchObject({
      command: ['/etc/loopgate/bin/fs-server', '--root'],
      cwd: '/etc/loopgate/work',
      trustAnnotations: true,
      timeoutSeconds: 30,
      deny: [],
    });
    expect(policy.mcp?.servers.web).toMatchObject({ trustAnnotations: false, deny: ['drop_table'] });
    // Their values are redacted wherever they appear, like every configured secret.
    expect(configuredSecrets(policy, { FS_TOKEN: 'fs-secret-value', WEB_AUTH: 'web-secret-value' })).toEqual(
      expect.arrayContaining(['fs-secret-value', 'web-secret-value']),
    );
    expect(approversFor(policy, 'fs__write_file')).toEqual({ users: [], groups: ['S0SRE'] });
    expect(approversFor(policy, 'fs__read_file')).toEqual({ users: ['U0MGR'], groups: [] });
    expect(approversFor(policy, 'fs__constructor')).toEqual({ users: ['U0MGR'], groups: [] });
    // Who may cancel a run before its first approval: the approvers of every gated tool it may ask for.
    expect(enabledGatedTools(policy)).toEqual(['fs__', 'fs__write_file', 'web__']);
    expect(approversFor(policy, 'fs__')).toEqual({ users: ['U0MGR'], groups: [] });
  });

  it('names each wrong key by its path', () => {
    expect(
      problems(
        [
          'approvals: { approvers: [U0MGR] }',
          'mcp:',
          '  servers:',
          '    a__b: { command: [x] }',
          '    both: { command: [x], url: "https://h/" }',
          '    neither: { effect: read }',
          '    wrong: { url: "https://h/", args: [a], tools: { t: { effect: maybe } }, colour: red }',
        ].join('\n'),
      ),
    ).toEqual(
      expect.arrayContaining([
        { key: 'mcp.servers.a__b', problem: expect.stringContaining('expected a server name') },
        { key: 'mcp.servers.both', problem: expect.stringContaining('either command') },
        { key: 'mcp.servers.neither', problem: expect.stringContaining('either command') },
        { key: 'mcp.servers.wrong.colour', problem: 'unknown key' },
        { key: 'mcp.servers.wrong.tools.t.effect', problem: 'expected read, write or notify' },
      ]),
    );
  });

  it('secrets are named, never written: an unset variable is a problem naming the key', () => {
    expect(
      problems(
        [
          'approvals: { approvers: [U0MGR] }',
          'mcp:',
          '  servers:',
          '    web: { url: "https://h/mcp", headersEnv: { Authorization: NOT_SET_WEB } }',
          '    fs: { command: [x], envFromEnv: { TOKEN: NOT_SET_FS } }',
        ].join('\n'),
      ),
    ).toEqual([
      {
        key: 'mcp.servers.web.headersEnv.Authorization',
        problem: 'environment variable NOT_SET_WEB is not set',
      },
      { key: 'mcp.servers.fs.envFromEnv.TOKEN', problem: 'environment variable NOT_SET_FS is not set' },
    ]);
  });

  it('a server that may serve writes needs approvers; a read-only one does not', () => {
    expect(
      problems('mcp:\n  servers:\n    fs: { command: [x] }\n    pg: { command: [y], effect: read }\n'),
    ).toEqual([
      {
        key: 'approvals.approvers',
        problem:
          'required: MCP server fs may serve write tools and has no approvers of its own (mcp.servers.fs.approvers)',
      },
    ]);
    expect(
      problems(
        'mcp:\n  servers:\n    pg: { command: [y], effect: read, tools: { exec: { effect: write } } }\n',
      ),
    ).toEqual([
      {
        key: 'mcp.servers.pg.tools.exec.approvers',
        problem: 'required: the tool is a write and nobody may approve it (or set approvals.approvers)',
      },
    ]);
    expect(problems('mcp:\n  servers:\n    fs: { command: [x], approvers: [U0MGR] }\n')).toEqual([]);
  });
});
