import { describe, expect, it } from 'vitest';
import {
  escapeAndTruncate,
  escapeMrkdwn,
  mention,
  preformatted,
  slackDate,
  TRUNCATION_MARKER,
  truncate,
  userMention,
} from '../../src/slack/mrkdwn.js';

describe('escapeMrkdwn', () => {
  it('escapes &, < and > (ampersand first, so entities are not double-escaped wrongly)', () => {
    expect(escapeMrkdwn('a & b <!channel> <@U123> c > d')).toBe(
      'a &amp; b &lt;!channel&gt; &lt;@U123&gt; c &gt; d',
    );
    expect(escapeMrkdwn('&lt;')).toBe('&amp;lt;');
  });
});

describe('truncate', () => {
  it('keeps short text and cuts long text to exactly max with the marker', () => {
    expect(truncate('short', 10)).toBe('short');
    const cut = truncate('x'.repeat(100), 50);
    expect(cut).toHaveLength(50);
    expect(cut.endsWith(TRUNCATION_MARKER)).toBe(true);
  });

  it('never splits a surrogate pair', () => {
    const cut = truncate('😀'.repeat(20), 16, '…');
    expect(cut.length).toBeLessThanOrEqual(16);
    expect(cut.slice(0, -1)).toBe('😀'.repeat((cut.length - 1) / 2));
  });
});

describe('escapeAndTruncate', () => {
  it('fits the escaped text within max and never cuts an entity in half', () => {
    const out = escapeAndTruncate('<'.repeat(100), 40);
    expect(out.length).toBeLessThanOrEqual(40);
    expect(out.replace(TRUNCATION_MARKER, '')).toMatch(/^(&lt;)+$/);
  });

  it('returns the escaped text unchanged when it fits', () => {
    expect(escapeAndTruncate('a<b', 10)).toBe('a&lt;b');
  });
});

describe('mentions', () => {
  it('renders ids as mentions and anything else escaped', () => {
    expect(userMention('U012ABC')).toBe('<@U012ABC>');
    expect(mention('S0SRE')).toBe('<!subteam^S0SRE>');
    expect(mention('W0ENT')).toBe('<@W0ENT>');
    expect(userMention('<!channel>')).toBe('&lt;!channel&gt;');
  });
});

describe('slackDate', () => {
  it('uses Slack date formatting with a UTC fallback', () => {
    const ms = Date.UTC(2026, 0, 2, 3, 4, 5);
    expect(slackDate(ms)).toBe(
      `<!date^${Math.floor(ms / 1000)}^{date_short_pretty} at {time}|2026-01-02 03:04 UTC>`,
    );
  });
});

describe('preformatted', () => {
  it('escapes, fits and cannot be closed early by backticks in the text', () => {
    const block = preformatted('```<!here>```', 100);
    expect(block.startsWith('```\n')).toBe(true);
    expect(block.endsWith('\n```')).toBe(true);
    expect(block.slice(4, -4)).not.toContain('```');
    expect(block).toContain('&lt;!here&gt;');
    expect(preformatted('y'.repeat(500), 100).length).toBeLessThanOrEqual(100);
  });
});

describe('escapeKeepingUserMentions', () => {
  it('keeps user mentions and escapes everything else, broadcasts included', async () => {
    const { escapeKeepingUserMentions } = await import('../../src/slack/mrkdwn.js');
    expect(escapeKeepingUserMentions('Cancelled by <@U0ALICE>.')).toBe('Cancelled by <@U0ALICE>.');
    expect(escapeKeepingUserMentions('<!channel> & <#C1> <@U1|x>')).toBe(
      '&lt;!channel&gt; &amp; &lt;#C1&gt; &lt;@U1|x&gt;',
    );
  });
});
