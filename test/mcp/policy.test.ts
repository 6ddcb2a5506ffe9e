/** The policy's `mcp:` section: shapes, key paths in errors, secrets by name, approvers, paths. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { enabledGatedTools, parsePolicy } from '../../src/config/policy.js';
import { configuredSecrets } from '../../src/config/policy-env.js';
import { approversFor } from '../../src/config/policy-limits.js';
import { mcpSettings, resolveMcpTool, SERVER_NAME } from '../../src/mcp/settings.js';
import { misbehaving, startSource } from './support.js';

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

/**
 * Item 6 of issue 21: `<server>__<tool>` is resolved against the configured servers, never split at the
 * first `__`, so a tool is governed by its own server's approvers and rules.
 */
describe('MCP tool names resolve to their own server', () => {
  const policyWith = (servers: string[], extra: string[] = []) =>
    parsePolicy(
      ['approvals: { approvers: [U0MGR] }', 'mcp:', '  servers:', ...servers, ...extra].join('\n'),
      { env: {} },
    );

  it('a server named db_ governs db___drop_table (its approvers, its tool overrides, its rules)', () => {
    const policy = policyWith(
      [
        '    db_:',
        '      command: [x]',
        '      approvers: [S0DBA]',
        '      tools: { truncate: { approvers: [U0OWNER] } }',
      ],
      ['rules:', '  db___drop_table:', '    - { outcome: deny, reason: never in chat }'],
    );
    expect(approversFor(policy, 'db___drop_table')).toEqual({ users: [], groups: ['S0DBA'] });
    expect(approversFor(policy, 'db___truncate')).toEqual({ users: ['U0OWNER'], groups: [] });
    expect(approversFor(policy, 'db___')).toEqual({ users: [], groups: ['S0DBA'] });
    expect(enabledGatedTools(policy)).toEqual(['db___', 'db___truncate']);
    expect(policy.rules.db___drop_table).toHaveLength(1);
  });

  it('a tool whose own name holds __ or starts with _ stays its server’s', () => {
    const policy = policyWith([
      '    db: { command: [x], approvers: [S0DB], tools: { a__b: { approvers: [U0AB] }, _x: { approvers: [U0X] } } }',
      '    my_db: { command: [y], approvers: [S0MY] }',
    ]);
    expect(approversFor(policy, 'db__a__b')).toEqual({ users: ['U0AB'], groups: [] });
    expect(approversFor(policy, 'db___x')).toEqual({ users: ['U0X'], groups: [] });
    expect(approversFor(policy, 'db__other')).toEqual({ users: [], groups: ['S0DB'] });
    expect(approversFor(policy, 'my_db__t')).toEqual({ users: [], groups: ['S0MY'] });
    expect(approversFor(policy, 'my_db__a__b')).toEqual({ users: [], groups: ['S0MY'] });
    // Not a configured server's name: the policy's default approvers.
    expect(approversFor(policy, 'zz__t')).toEqual({ users: ['U0MGR'], groups: [] });
    expect(approversFor(policy, 'my__t')).toEqual({ users: ['U0MGR'], groups: [] });
  });

  it('refuses db beside db_ at load, naming the key; db beside dba, db-x or db_x is accepted', () => {
    expect(
      problems(
        'approvals: { approvers: [U0MGR] }\nmcp:\n  servers:\n    db: { command: [x] }\n    db_: { command: [y] }\n',
      ),
    ).toEqual([
      {
        key: 'mcp.servers.db_',
        problem:
          "ambiguous beside the server db: db___x could be db_'s tool x or db's tool _x; rename one of them",
      },
    ]);
    expect(
      problems(
        [
          'approvals: { approvers: [U0MGR] }',
          'mcp:',
          '  servers:',
          ...['db', 'dba', 'db-x', 'db_x', 'db_x_'].map((n) => `    ${n}: { command: [x] }`),
        ].join('\n'),
      ),
    ).toEqual([
      {
        key: 'mcp.servers.db_x_',
        problem:
          "ambiguous beside the server db_x: db_x___x could be db_x_'s tool x or db_x's tool _x; rename one of them",
      },
    ]);
  });

  it('a rule on db___drop_table is checked against the server db_', () => {
    expect(
      problems(
        [
          'approvals: { approvers: [U0MGR] }',
          'mcp:',
          '  servers:',
          '    db_: { command: [x], tools: { drop_table: { effect: read } } }',
          'rules:',
          '  db___drop_table:',
          '    - { outcome: deny, reason: never in chat }',
        ].join('\n'),
      ),
    ).toEqual([
      { key: 'rules.db___drop_table', problem: 'is made a read tool in mcp.servers: rules do not apply' },
    ]);
  });

  // A small alphabet so that prefixes (db, db_, d_b) come up often; every name is a valid one.
  it('a real server named db_: its write is served as db___append_line and asks db_’s approvers', async () => {
    const command = JSON.stringify(misbehaving('slow-write', '/dev/null'));
    const policy = policyWith([`    db_: { command: ${command}, approvers: [S0DBA] }`]);
    const { source } = await startSource(policy.mcp?.servers ?? {});
    try {
      const tool = source.tools().get('db___append_line');
      expect(tool?.effect).toBe('write');
      expect(approversFor(policy, tool?.name ?? '')).toEqual({ users: [], groups: ['S0DBA'] });
    } finally {
      await source.close();
    }
  }, 30_000);

  const serverName = fc.stringMatching(/^[ab1](?:[ab-]|_[ab]){0,4}_?$/).filter((n) => SERVER_NAME.test(n));
  const toolName = fc.stringMatching(/^[ab_-]{1,8}$/);

  it('property: every accepted set of servers resolves each <server>__<tool> to that server and tool', () => {
    fc.assert(
      fc.property(fc.uniqueArray(serverName, { minLength: 1, maxLength: 6 }), toolName, (names, tool) => {
        const servers = Object.fromEntries(names.map((n) => [n, { command: ['x'] }]));
        const parsed = mcpSettings.safeParse({ servers });
        // Refused exactly when two configured names make some tool name ambiguous.
        const clash = names.some((n) => names.includes(`${n}_`));
        expect(parsed.success).toBe(!clash);
        if (!parsed.success) return;
        for (const server of names) {
          expect(resolveMcpTool(parsed.data, `${server}__${tool}`)).toMatchObject({ server, tool });
        }
      }),
    );
  });
});
