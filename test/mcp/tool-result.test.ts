/** MCP results as observations (src/mcp/tool-result.ts). */
import { describe, expect, it } from 'vitest';
import { MAX_PART_CHARS, resultData } from '../../src/mcp/tool-result.js';

describe('resultData', () => {
  it('text alone is the text; with structured content both are kept', () => {
    expect(
      resultData(
        {
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        't',
      ),
    ).toBe('a\nb');
    expect(resultData({ content: [], structuredContent: { n: 1 } }, 't')).toEqual({
      structuredContent: { n: 1 },
    });
  });

  it('binary parts are notes with type and size; links and resources keep their URI', () => {
    const data = resultData(
      {
        content: [
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'audio', mimeType: 'audio/wav', data: 'AAAAAAAA' },
          { type: 'resource', resource: { uri: 'file:///x.bin', mimeType: 'application/zip', blob: 'AAAA' } },
          { type: 'resource_link', uri: 'file:///y', name: 'y' },
          { type: 'hologram' },
        ],
      },
      't',
    );
    expect(data).toBe(
      [
        '[image (image/png), 3 bytes: not shown to the model]',
        '[audio (audio/wav), 6 bytes: not shown to the model]',
        '[resource file:///x.bin (application/zip): 3 bytes of binary data, not shown]',
        '[resource link file:///y (y)]',
        '[content of type hologram: not shown]',
      ].join('\n'),
    );
  });

  it('isError is a failure with the server’s text; a part longer than the cap is cut', () => {
    expect(() =>
      resultData({ isError: true, content: [{ type: 'text', text: 'no such row' }] }, 's__t'),
    ).toThrow(
      expect.objectContaining({ code: 'mcp_tool_error', message: 's__t reported an error: no such row' }),
    );
    const long = resultData({ content: [{ type: 'text', text: 'y'.repeat(MAX_PART_CHARS + 10) }] }, 't');
    expect(String(long).length).toBeLessThan(MAX_PART_CHARS + 100);
    expect(String(long)).toMatch(/cut by loopgate: 1000010 characters in all\]$/);
  });
});
