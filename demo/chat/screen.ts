/**
 * The terminal around the prompt: lines from the bot arrive while someone may be typing, so on a TTY the
 * prompt line is cleared, the lines are printed, and the prompt (with what was typed) is redrawn.
 */
import type { Interface } from 'node:readline';

export class Screen {
  /** Without a TTY: a prompt was written and no line ended it yet. */
  private promptOpen = false;

  constructor(
    private readonly rl: Interface,
    private readonly out: NodeJS.WriteStream,
  ) {}

  print(text: string): void {
    if (this.out.isTTY) {
      this.out.write('\r\x1b[K');
      this.out.write(`${text}\n`);
      this.rl.prompt(true);
      return;
    }
    this.out.write(`${this.promptOpen ? '\n' : ''}${text}\n`);
    this.promptOpen = false;
  }

  /** Shows `prompt` as the new prompt. */
  prompt(prompt: string): void {
    this.rl.setPrompt(prompt);
    this.rl.prompt(true);
    this.promptOpen = !this.out.isTTY;
  }
}
