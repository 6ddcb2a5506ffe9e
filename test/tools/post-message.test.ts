import { describe, expect, it } from 'vitest';
import type { SlackPoster } from '../../src/tools/ports.js';
import { createPostMessage, postMessageSettings } from '../../src/tools/post-message.js';
import { parseArgs, previewOf, run } from './tool-harness.js';

function recordingPoster() {
  const posts: Array<{ channel: string; text: string }> = [];
  const slack: SlackPoster = {
    async postMessage(channel, text) {
      posts.push({ channel, text });
      return { ts: '1700000000.000100', permalink: 'https://example.slack.com/archives/C0INCIDENTS/p1' };
    },
  };
  return { slack, posts };
}

const settings = postMessageSettings.parse({ channels: ['C0INCIDENTS', 'C0OPS'], maxChars: 200 });

describe('post_message', () => {
  it('is a notify tool that posts through the injected port', async () => {
    const { slack, posts } = recordingPoster();
    const tool = createPostMessage(settings, { slack });
    expect(tool.effect).toBe('notify');
    const out = await run(tool, { channel: 'C0OPS', text: 'Deploy of *payments* finished.' });
    expect(posts).toEqual([{ channel: 'C0OPS', text: 'Deploy of *payments* finished.' }]);
    expect(out).toEqual({
      channel: 'C0OPS',
      ts: '1700000000.000100',
      permalink: 'https://example.slack.com/archives/C0INCIDENTS/p1',
    });
  });

  it('refuses channels outside the allowlist and oversized text at validation', () => {
    const tool = createPostMessage(settings, recordingPoster());
    expect(() => parseArgs(tool, { channel: 'C0RANDOM', text: 'hi' })).toThrow();
    expect(() => parseArgs(tool, { channel: 'C0OPS', text: 'x'.repeat(201) })).toThrow();
    expect(() => parseArgs(tool, { channel: 'C0OPS', text: '   ' })).toThrow();
  });

  it('previews the channel and the text as it will be posted', async () => {
    const tool = createPostMessage(settings, recordingPoster());
    const preview = await previewOf(tool, { channel: 'C0INCIDENTS', text: 'Line one\nLine *two*' });
    expect(preview).toBe('**Post in <#C0INCIDENTS>:**\n> Line one\n> Line *two*');
  });
});
