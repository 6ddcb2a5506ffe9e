/** Assertions shared by the builder tests: Slack's limits, and which mentions a payload would ping. */
import { expect } from 'vitest';
import { blockProblems } from '../fakes/slack-api-server.js';

/** Every mrkdwn/plain_text/markdown string in a payload. */
export function texts(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(texts);
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return Object.entries(obj).flatMap(([key, v]) =>
      key === 'text' || typeof v === 'object' ? texts(v) : [],
    );
  }
  return [];
}

/** Mention tokens Slack would turn into pings: users, groups and broadcasts. */
export function pings(value: unknown): string[] {
  return texts(value).flatMap(
    (t) => t.match(/<(@[UW][A-Z0-9]+|!channel|!here|!everyone|!subteam\^[A-Z0-9]+)(\|[^>]*)?>/g) ?? [],
  );
}

export function expectValidMessageBlocks(blocks: unknown[]): void {
  expect(blockProblems(blocks, 'message')).toEqual([]);
}

export function expectValidViewBlocks(blocks: unknown[]): void {
  expect(blockProblems(blocks, 'view')).toEqual([]);
}

/** The text a Full text modal shows, with each section's label line and fences taken out and pieces joined. */
export function shownText(blocks: unknown[]): string {
  return texts(blocks)
    .map((t) => t.replace(/^\*[^*]+\*(?: \(\d+ of \d+\))?\n(```\n)?/, '').replace(/\n```$/, ''))
    .join('');
}
