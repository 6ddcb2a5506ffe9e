import { describe, expect, it } from 'vitest';
import { CALLBACK_IDS, REJECT_REASON_INPUT } from '../../src/slack/ids.js';
import { placeholderMessage, progressText, THINKING_TEXT } from '../../src/slack/progress.js';
import { parseRejectReasonSubmission, rejectReasonModal } from '../../src/slack/reject-reason-modal.js';
import { viewSubmissionPayload } from '../fakes/slack-signing.js';
import { expectValidMessageBlocks, expectValidViewBlocks } from './block-checks.js';

const id = { teamId: 'T1', appId: 'A1', botUserId: 'UBOT' };

describe('rejectReasonModal', () => {
  it('asks for an optional multiline reason and carries the approval id in private_metadata', () => {
    const modal = rejectReasonModal({
      approvalId: 'apr_1',
      channel: 'C1',
      messageTs: '1.000100',
      tool: 'page_oncall',
    });
    expect(modal.callback_id).toBe(CALLBACK_IDS.rejectReason);
    expect(JSON.parse(modal.private_metadata ?? '')).toEqual({
      approvalId: 'apr_1',
      channel: 'C1',
      messageTs: '1.000100',
    });
    const input = modal.blocks.find((b) => b.type === 'input');
    expect(input).toMatchObject({
      optional: true,
      block_id: REJECT_REASON_INPUT.blockId,
      element: { type: 'plain_text_input', multiline: true, action_id: REJECT_REASON_INPUT.actionId },
    });
    expect(modal.submit).toBeDefined();
    expectValidViewBlocks(modal.blocks);
  });

  it('reads the submitted reason (trimmed; empty means none) from a view_submission payload', () => {
    const modal = rejectReasonModal({ approvalId: 'apr_1', channel: 'C1', messageTs: '1.000100' });
    const submit = (value: string | null) =>
      viewSubmissionPayload(id, {
        user: 'U1',
        callbackId: modal.callback_id ?? '',
        privateMetadata: modal.private_metadata ?? '',
        values: {
          [REJECT_REASON_INPUT.blockId]: {
            [REJECT_REASON_INPUT.actionId]: { type: 'plain_text_input', value },
          },
        },
      }).view;
    expect(parseRejectReasonSubmission(submit('  not now  '))).toEqual({
      approvalId: 'apr_1',
      channel: 'C1',
      messageTs: '1.000100',
      reason: 'not now',
    });
    expect(parseRejectReasonSubmission(submit(null)).reason).toBeUndefined();
    expect(parseRejectReasonSubmission(submit('   ')).reason).toBeUndefined();
    expect(() =>
      parseRejectReasonSubmission({ callback_id: 'other', private_metadata: '{}', state: { values: {} } }),
    ).toThrow();
  });
});

describe('progress text', () => {
  it('names the step from its tools, with a default for unknown tools', () => {
    expect(progressText(['prometheus_query'])).toBe('Querying Prometheus…');
    expect(progressText(['lookup_customer'])).toBe('Running lookup_customer…');
    expect(progressText(['search_runbooks', 'search_runbooks', 'http_get'])).toBe(
      'Searching the runbooks… · Fetching a page…',
    );
    expect(progressText([])).toBe(THINKING_TEXT);
    expect(progressText(['x'], { x: 'Doing x…' })).toBe('Doing x…');
  });

  it('renders the placeholder escaped', () => {
    const message = placeholderMessage('Running <!channel>…');
    expect(message.text).toContain('&lt;!channel&gt;');
    expectValidMessageBlocks(message.blocks);
  });
});
