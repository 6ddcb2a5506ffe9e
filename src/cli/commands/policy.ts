import { ConfigError } from '../../config/errors.js';
import { loadPolicy, type Policy } from '../../config/policy.js';
import { shadowReason } from '../../config/shadow-mode.js';
import { readCalendarsOnce } from '../../policy/calendar/refresher.js';
import { explanationText } from '../../policy/describe.js';
import type { FreezeState } from '../../policy/freezes.js';
import { explainGate } from '../../policy/gate.js';
import { CHANGES, type Change } from '../../policy/replay.js';
import { parseCommandLine } from '../args.js';
import { channelFactsOf, explainChannel } from '../channel-explain.js';
import type { CliContext, Command } from '../command.js';
import { UsageError } from '../errors.js';
import { json, utc, write } from '../format.js';
import { parseInstant, parseTimeRange } from '../time-range.js';

const help = `Usage: loopgate policy test <tool> '<json args>' [--channel <id>] [--at <time>] [--config <path>] [--json]
       loopgate policy replay <proposed.yaml> --since <time> [--until <time>] [--fail-on <changes>] [--json]

policy test: says which rule of the policy decides a call of <tool> with these arguments, and why: each
rule of the tool tried in order (first match wins) with the condition that did not hold, then the
decision: allowed by a rule, denied by a rule (and what the model is told), or asked of whom (approvers,
quorum, expiry, reminders, escalation, grants). No rule matching means the tool's default: ask its
approvers. Nothing runs and nothing is stored; the arguments are taken as given (not checked against the
tool's schema). When the call would be in shadow mode (approvals.mode, the tool's mode, or --channel listed
in channels.shadow) it says so: it would not run, and its card would ask what people would decide. Rules
on change freezes (when: { freeze: … }) are judged at --at (default now); the freezes in force are listed
when the policy has any. With --channel it says which channel rule decides and what it changes; the
approvers named (on-call sources included) are the ones in force for that channel.

policy replay: the write and notify calls decided from --since to --until (read from the audit log, each
with the arguments of its approval record; needs REDIS_URL), decided again under <proposed.yaml>. Prints
each call that would be decided differently, with what the policy did then and what the proposed one
would do: no_longer_offered (the tool is not enabled), newly_allowed (runs without a person),
newly_denied, no_longer_allowed, no_longer_denied, approvers (other people asked), quorum. Calls whose
approval record has expired are counted, not replayed. Nothing runs and nothing is stored.

  --channel <channel>  policy test: the channel the call is asked from: an id (C0123, D0123), #name or
                       dm; says which channels.rules entry decides (tools offered, read-only, approvers)
                       and applies channels.shadow
  --at <time>          policy test: the moment the call is judged (ISO 8601, or a span back from now:
                       2h), for freezes; default now
  --config <path>      policy test: the policy file; default LOOPGATE_CONFIG, else ./loopgate.yaml
  --since <time>       replay: start of the range (ISO 8601, or a span back from now: 24h, 30d)
  --until <time>       replay: end of the range, default now
  --fail-on <changes>  replay: exit 3 when any call changes in one of these ways (comma-separated change
                       names above, or any), e.g. --fail-on newly_allowed for CI
  --json               print JSON: policy test {"tool", "at", "freezes", "freezesUnknown" (calendars not read), "tried", "decision", "shadow", "channel"}; policy replay the report`;

const options = {
  config: { type: 'string' },
  channel: { type: 'string' },
  at: { type: 'string' },
  json: { type: 'boolean' },
  since: { type: 'string' },
  until: { type: 'string' },
  'fail-on': { type: 'string' },
} as const;

/** Exit status of a replay whose changes cross --fail-on. */
const CROSSED = 3;

export const policyCommand: Command = {
  name: 'policy',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 0, max: 3 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const [sub, ...rest] = line.positionals;
    try {
      if (sub === 'test') return await policyTest(rest, line.values, ctx);
      if (sub === 'replay') return await policyReplay(rest, line.values, ctx);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      await write(ctx.stderr, `loopgate: ${error.message}\n`);
      return 1;
    }
    throw new UsageError(
      sub ? `unknown subcommand ${JSON.stringify(sub)}` : 'missing subcommand: test or replay',
      help,
    );
  },
};

type Values = { config?: string | undefined; json?: boolean | undefined; channel?: string | undefined } & {
  at?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  'fail-on'?: string | undefined;
};

/** `freezes in force: year-end; not known: launches (the calendar answered HTTP 500)`. */
function freezesText(freezes: FreezeState | null, policy: Pick<Policy, 'freezes'>): string {
  const inForce = freezes?.inForce.length
    ? `freezes in force: ${freezes.inForce.join(', ')}`
    : 'no freeze in force';
  const unknown = (freezes?.unknown ?? []).map((name) => {
    const view = policy.freezes[name]?.calendar?.view.current;
    return `${name} (${view?.kind === 'unknown' ? view.why : 'not known'})`;
  });
  return unknown.length > 0
    ? `${inForce}; not known, rules on them are asked of people: ${unknown.join(', ')}`
    : inForce;
}

async function policyTest(positionals: string[], values: Values, ctx: CliContext): Promise<number> {
  const [tool, argsText] = positionals;
  if (!tool || argsText === undefined)
    throw new UsageError('expected a tool name and its arguments as JSON', help);
  let args: unknown;
  try {
    args = JSON.parse(argsText);
  } catch (error) {
    throw new UsageError(`the arguments are not JSON: ${(error as Error).message}`, help);
  }
  const at = values.at === undefined ? ctx.now() : parseInstant(values.at, ctx.now());
  if (at === undefined) throw new UsageError(`--at: not a time: ${JSON.stringify(values.at)}`, help);
  const path = values.config ?? (ctx.env.LOOPGATE_CONFIG || './loopgate.yaml');
  const policy = await loadPolicy(path, { env: ctx.env });
  await readCalendarsOnce(policy.freezes, ctx.env, ctx.now());
  const facts = values.channel === undefined ? null : channelFactsOf(values.channel);
  if (values.channel !== undefined && facts === null)
    throw new UsageError(
      `--channel: expected a channel id, #name or dm: ${JSON.stringify(values.channel)}`,
      help,
    );
  const explained = explainGate(policy, tool, args, at);
  const { tried, freezes } = explained;
  const channel = facts ? explainChannel(policy, tool, explained.decision, facts) : null;
  const decision = channel?.decision ?? explained.decision;
  // Said only where the policy has freezes: without them the moment changes nothing.
  const frozen =
    Object.keys(policy.freezes).length === 0 ? '' : `at ${utc(at)}: ${freezesText(freezes, policy)}\n`;
  // A deny rule denies in shadow mode too: only calls that would run or be asked are shadowed.
  const why = decision.kind === 'deny' ? null : shadowReason(policy, tool, facts?.id || undefined);
  const shadowLine = why
    ? `shadow mode (${why}): the call would NOT run; its card would say "Shadow: this will not run" and ask what people would decide, and the model would be told it was not executed\n`
    : '';
  await write(
    ctx.stdout,
    values.json
      ? json({
          tool,
          at: utc(at),
          freezes: freezes?.inForce ?? null,
          ...(freezes?.unknown.length ? { freezesUnknown: freezes.unknown } : {}),
          tried,
          decision,
          shadow: why,
          ...(channel && {
            channel: { channel: channel.channel, rule: channel.scope.label, refused: channel.refused },
          }),
        })
      : `${tool} ${JSON.stringify(args)}\n${frozen}${channel?.text ?? ''}${explanationText(tool, tried, decision)}${shadowLine}`,
  );
  return 0;
}

function failOnOf(text: string | undefined): (Change | 'any')[] {
  if (text === undefined) return [];
  const known: readonly string[] = [...CHANGES, 'any'];
  return text.split(',').map((part) => {
    const name = part.trim();
    if (!known.includes(name)) {
      throw new UsageError(
        `--fail-on: unknown change ${JSON.stringify(name)} (one of ${known.join(', ')})`,
        help,
      );
    }
    return name as Change | 'any';
  });
}

async function policyReplay(positionals: string[], values: Values, ctx: CliContext): Promise<number> {
  const [proposedPath, extra] = positionals;
  if (!proposedPath) throw new UsageError('expected the proposed policy file', help);
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`, help);
  const failOn = failOnOf(values['fail-on']);
  const { from, to } = parseTimeRange(values, ctx.now(), help);
  const proposed = await loadPolicy(proposedPath, { env: ctx.env });
  // Calls are judged at the moment they were asked: a calendar's recent past is read with its future.
  await readCalendarsOnce(proposed.freezes, ctx.env, ctx.now());
  // Loaded only here: the store's code is not needed by `policy test`.
  const { crosses, replayPolicy, replayText } = await import('../policy-replay.js');
  const report = await replayPolicy(await ctx.store(), proposed, from, to);
  await write(ctx.stdout, values.json ? json(report) : replayText(report));
  if (!crosses(report, failOn)) return 0;
  await write(
    ctx.stderr,
    `loopgate: the proposed policy changes calls in a way --fail-on refuses (${failOn.join(', ')})\n`,
  );
  return CROSSED;
}
