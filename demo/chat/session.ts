/**
 * The chat's conversation loop (node:readline): what you type goes to the bot as a Slack user would send
 * it (a mention starts a thread, later lines reply in it), and approval cards are decided at the prompt
 * by whoever you act as. Lines are handled one at a time, in order, so the session can be driven through
 * stdin as well as typed.
 */
import { createInterface, type Interface } from 'node:readline';
import type { Policy } from '../../src/config/policy.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import type { Store } from '../../src/store/index.js';
import type { StoredView } from '../../test/fakes/slack-api-server.js';
import { pendingApprovalId } from '../lib/cards.js';
import { DemoError } from '../lib/errors.js';
import { indent, messageLines, type NameOf } from '../lib/slack-text.js';
import type { Stage } from '../lib/stage.js';
import { cardRecorded } from '../lib/store-view.js';
import { clickButton, mentionBot, replyInThread, submitRejectReason } from '../lib/user-actions.js';
import { waitUntil } from '../lib/wait.js';
import { listedApprovers } from './config.js';
import { type Feed, followSlack, type PostedCard } from './feed.js';
import type { ChatGroups } from './groups.js';
import { Screen } from './screen.js';

export const DEFAULT_USER = 'U0YOU';

export const HELP = `Type a message to ask @loopgate; the next lines reply in the same thread.
  /as U0XXX   act as another Slack user (e.g. an approver, to decide a card)
  /group S0XXX U0AAA,U0BBB   set the members of a user group (approvers may be groups)
  /thread     start a new thread with your next message
  /cards      show again the cards you skipped
  /help       this text
  /quit       stop the bot and the worker, clean up and exit`;

export interface SessionDeps {
  stage: Stage;
  store: Store;
  policy: Policy;
  channel: string;
  nameOf: NameOf;
  input: NodeJS.ReadableStream;
  output: NodeJS.WriteStream;
  groups: ChatGroups;
}

/** How the bot answered a click on a card. */
type ClickOutcome = 'decided' | 'refused' | 'modal';

/** A reject click opened the reason form; the next line is the reason. */
interface Rejecting {
  card: PostedCard;
  view: StoredView;
}

class ChatSession {
  private readonly rl: Interface;
  private readonly screen: Screen;
  private readonly feed: Feed;
  private actingUser = DEFAULT_USER;
  private threadTs: string | null = null;
  /** Cards waiting for a decision at the prompt, oldest first. */
  private cards: PostedCard[] = [];
  private rejecting: Rejecting | null = null;
  /** Modals the bot opened, in order. */
  private readonly views: StoredView[] = [];

  constructor(private readonly deps: SessionDeps) {
    this.rl = createInterface({
      input: deps.input,
      output: deps.output,
      terminal: deps.output.isTTY === true,
    });
    this.screen = new Screen(this.rl, deps.output);
    this.feed = followSlack(deps.stage.slack, {
      print: (text) => this.screen.print(text),
      nameOf: deps.nameOf,
      onModal: (view) => this.views.push(view),
      onCard: (card) => this.cardArrived(card),
    });
  }

  /** Runs until /quit, Ctrl-C, SIGTERM or the end of the input. */
  async run(): Promise<void> {
    const end = () => this.rl.close();
    this.rl.on('SIGINT', end);
    process.once('SIGINT', end);
    process.once('SIGTERM', end);
    this.screen.prompt(this.promptText());
    try {
      for await (const raw of this.rl) {
        try {
          if (await this.handle(raw.trim())) break;
        } catch (error) {
          if (!(error instanceof DemoError)) throw error;
          this.screen.print(`! ${error.message}`);
          this.deps.stage.checkAlive();
        }
        this.screen.prompt(this.promptText());
      }
    } finally {
      process.off('SIGINT', end);
      process.off('SIGTERM', end);
      this.feed.stop();
      this.rl.close();
    }
  }

  private async handle(line: string): Promise<boolean> {
    if (this.rejecting) {
      const rejecting = this.rejecting;
      this.rejecting = null;
      await this.submitReason(line, rejecting);
      return false;
    }
    if (line.startsWith('/')) return this.command(line);
    const card = this.cards.find((c) => this.stillPending(c));
    if (card) await this.decide(line, card);
    else if (line !== '') await this.send(line);
    return false;
  }

  private promptText(): string {
    this.cards = this.cards.filter((c) => this.stillPending(c));
    if (this.rejecting) return 'reason for rejecting (optional, Enter for none) > ';
    if (this.cards[0]) return `decide the card as ${this.actingUser}: [a]pprove, [r]eject, [s]kip > `;
    return `${this.actingUser} > `;
  }

  private cardArrived(card: PostedCard): void {
    // A click before loopgate has recorded the card is refused as "still being set up": wait for it.
    void waitUntil(
      'the card to be recorded',
      () => cardRecorded(this.deps.store, card.approvalId),
      10_000,
    ).then(
      () => {
        this.cards.push(card);
        const message = this.deps.stage.slack.message(this.deps.channel, card.ts);
        for (const group of this.deps.groups.groupsOf(message?.blocks)) {
          this.screen.print(
            `(this card waits on ${this.deps.groups.describe(group)}: /as one of them to decide it)`,
          );
        }
        this.screen.prompt(this.promptText());
      },
      (error: unknown) => this.screen.print(`! ${error instanceof Error ? error.message : String(error)}`),
    );
  }

  private stillPending(card: PostedCard): boolean {
    const message = this.deps.stage.slack.message(this.deps.channel, card.ts);
    return pendingApprovalId(message?.blocks) === card.approvalId;
  }

  /** True once the card no longer waits, with everything the bot did until then shown. */
  private shownDecided(card: PostedCard): boolean {
    this.feed.flush();
    return !this.stillPending(card);
  }

  private async send(text: string): Promise<void> {
    const { stage, channel } = this.deps;
    if (this.threadTs === null) {
      this.threadTs = (await mentionBot(stage, { channel, user: this.actingUser, text })).threadTs;
    } else {
      await replyInThread(stage, { channel, user: this.actingUser, text, threadTs: this.threadTs });
    }
  }

  private async decide(answer: string, card: PostedCard): Promise<void> {
    if (/^(a|approve)$/i.test(answer)) {
      await this.click(card, ACTION_IDS.approve, 'Approve');
    } else if (/^(r|reject)$/i.test(answer)) {
      if ((await this.click(card, ACTION_IDS.reject, 'Reject')) === 'modal') {
        const view = this.views.at(-1);
        if (view) this.rejecting = { card, view };
      }
    } else if (/^(s|skip)$/i.test(answer)) {
      this.cards = this.cards.filter((c) => c !== card);
      this.screen.print('(skipped: the card stays in the thread; /cards shows it again)');
    } else {
      this.screen.print(
        'Decide the card first: a (approve), r (reject) or s (skip); /as U0XXX to act as someone else.',
      );
    }
  }

  /** Clicks as the acting user and waits for the bot's answer: a decision, a refusal or a modal. */
  private async click(card: PostedCard, actionId: string, text: string): Promise<ClickOutcome> {
    const { stage, channel } = this.deps;
    const notes = () => stage.slack.ephemerals(channel).filter((e) => e.user === this.actingUser).length;
    const notesBefore = notes();
    const viewsBefore = this.views.length;
    await clickButton(stage, {
      user: this.actingUser,
      channel,
      messageTs: card.ts,
      threadTs: card.threadTs,
      actionId,
      value: card.approvalId,
      text,
    });
    const outcome = await waitUntil<ClickOutcome>(
      "the bot's answer to the click",
      () => {
        stage.checkAlive();
        if (this.shownDecided(card)) return 'decided';
        if (this.views.length > viewsBefore) return 'modal';
        return notes() > notesBefore ? 'refused' : undefined;
      },
      10_000,
    );
    this.feed.flush();
    return outcome;
  }

  private async submitReason(reason: string, rejecting: Rejecting): Promise<void> {
    const notice = await submitRejectReason(this.deps.stage, {
      user: this.actingUser,
      view: rejecting.view,
      reason,
    });
    if (notice) {
      const lines = messageLines({ text: '', blocks: notice }, this.deps.nameOf);
      this.screen.print(`loopgate  (the form now says)\n${indent(lines)}`);
      return;
    }
    await waitUntil('the card to show the rejection', () => this.shownDecided(rejecting.card), 10_000);
  }

  /** Resolves true for /quit. */
  private command(line: string): boolean {
    const [name, arg, ...rest] = line.split(/\s+/);
    switch (name) {
      case '/quit':
      case '/exit':
        return true;
      case '/as':
        this.actAs(arg);
        return false;
      case '/group':
        this.screen.print(this.deps.groups.command([arg ?? '', ...rest]));
        return false;
      case '/thread':
        this.threadTs = null;
        this.screen.print('(your next message starts a new thread)');
        return false;
      case '/cards':
        this.requeueSkippedCards();
        return false;
      default:
        this.screen.print(HELP);
        return false;
    }
  }

  private actAs(userId: string | undefined): void {
    if (!userId || !/^[UW][A-Z0-9]{2,}$/.test(userId)) {
      this.screen.print('Usage: /as U0XXX (a Slack user id: U or W, then capital letters and digits)');
      return;
    }
    this.actingUser = userId;
    const listed = listedApprovers(this.deps.policy).has(userId) ? 'listed' : 'not listed';
    this.screen.print(`(you now act as ${userId}, ${listed} as an approver in the policy)`);
  }

  private requeueSkippedCards(): void {
    const known = new Set(this.cards.map((c) => c.ts));
    for (const m of this.deps.stage.slack.messages(this.deps.channel)) {
      const approvalId = pendingApprovalId(m.blocks);
      if (approvalId && !known.has(m.ts))
        this.cards.push({ ts: m.ts, threadTs: m.thread_ts ?? m.ts, approvalId });
    }
    const waiting = this.cards.length;
    this.screen.print(waiting === 0 ? '(no card is waiting for a decision)' : `(${waiting} card(s) waiting)`);
  }
}

export function runSession(deps: SessionDeps): Promise<void> {
  return new ChatSession(deps).run();
}
