/**
 * The Edit form reads back exactly what it showed (issue 21, item 2): for any arguments, a form sent back
 * as Slack would send it untouched yields the very same arguments, values too long for an input included.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EDIT_INPUT, editModal, parseEditSubmission } from '../../src/slack/edit-modal.js';
import { CALLBACK_IDS } from '../../src/slack/ids.js';

const SCHEMA = {
  type: 'object',
  properties: {
    env: { type: 'string', enum: ['staging', 'prod'] },
    replicas: { type: 'integer' },
    ratio: { type: 'number' },
    dryRun: { type: 'boolean' },
    text: { type: 'string' },
    labels: { type: 'object' },
  },
};

type Element = Record<string, unknown> & { type: string };

/** What Slack sends back for an input nobody touched. */
function untouched(element: Element): Record<string, unknown> {
  switch (element.type) {
    case 'static_select':
      return { type: element.type, selected_option: element.initial_option ?? null };
    case 'checkboxes':
      return { type: element.type, selected_options: element.initial_options ?? [] };
    default:
      return { type: element.type, value: element.initial_value ?? null };
  }
}

function sentBack(args: unknown, schema: Record<string, unknown>) {
  const modal = editModal({
    approvalId: 'apr_1',
    channel: 'C0OPS',
    messageTs: '1.2',
    tool: 't',
    schema,
    args,
  });
  const values: Record<string, Record<string, unknown>> = {};
  for (const block of modal.blocks as unknown as Array<Record<string, unknown>>) {
    if (block.type !== 'input') continue;
    values[block.block_id as string] = { [EDIT_INPUT]: untouched(block.element as Element) };
  }
  const view = {
    callback_id: CALLBACK_IDS.edit,
    private_metadata: modal.private_metadata,
    state: { values },
  };
  return parseEditSubmission(view, schema, args);
}

const anyText = fc.oneof(
  fc.string({ maxLength: 50 }),
  fc.integer({ min: 2_990, max: 3_700 }).map((n) => 'x'.repeat(n)),
);

describe('Edit form read-back', () => {
  it('gives back exactly the arguments it was opened with when nothing is touched (property)', () => {
    const args = fc.record(
      {
        env: fc.oneof(fc.constantFrom('staging', 'prod'), fc.string({ maxLength: 5 })),
        replicas: fc.oneof(fc.integer(), fc.constant('3')),
        ratio: fc.double({ noNaN: true, noDefaultInfinity: true }),
        dryRun: fc.boolean(),
        text: fc.oneof(anyText, fc.constant('')),
        labels: fc.dictionary(fc.string({ maxLength: 8 }), anyText, { maxKeys: 3 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(args, (a) => {
        const back = sentBack(a, SCHEMA);
        expect(back.ok).toBe(true);
        if (back.ok) expect(back.args).toEqual(a);
      }),
      { numRuns: 300 },
    );
  });

  it('gives back whole-JSON arguments untouched, and a too-long field is no input but a note', () => {
    expect(sentBack([1, 'two', { three: 3 }], {})).toMatchObject({
      ok: true,
      args: [1, 'two', { three: 3 }],
    });
    const modal = editModal({
      approvalId: 'apr_1',
      channel: 'C0OPS',
      messageTs: '1.2',
      tool: 't',
      schema: SCHEMA,
      args: { text: 'y'.repeat(3_001) },
    });
    const blocks = modal.blocks as unknown as Array<Record<string, unknown>>;
    expect(blocks.some((b) => b.block_id === 'arg:text')).toBe(false);
    expect(JSON.stringify(blocks)).toContain('*text* is 3,001 characters, too long for a form field');
  });
});
