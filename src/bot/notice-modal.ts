import { type ModalView, plainText, section } from '../slack/block-kit.js';
import { SLACK_LIMITS } from '../slack/limits.js';
import { truncate } from '../slack/mrkdwn.js';

/**
 * A modal that only says something (mrkdwn, so mentions and dates render): what replaces the reject-reason
 * form when its submission could not be recorded.
 */
export function noticeModal(title: string, mrkdwn: string): ModalView {
  return {
    type: 'modal',
    title: plainText(title, SLACK_LIMITS.modalTitle),
    close: plainText('Close', SLACK_LIMITS.modalTitle),
    blocks: [section(truncate(mrkdwn, SLACK_LIMITS.sectionText, '…'))],
  };
}
