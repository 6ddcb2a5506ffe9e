/**
 * A failure the demo or the chat explains to the person at the terminal: its message says what went
 * wrong and what to do, and is printed without a stack trace.
 */
export class DemoError extends Error {
  override readonly name = 'DemoError';
}
