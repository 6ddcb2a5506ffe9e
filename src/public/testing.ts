/**
 * `import { runToolCall } from 'loopgate/testing'`: unit tests of a tool package against loopgate's own
 * argument validation, policy gate, preview and execution, with no Slack, Redis or model. Re-exports only.
 */
export type { GateReport, LoggedLine, ToolCallReport, ToolCallTest } from '../testing/run-call.js';
export { runToolCall } from '../testing/run-call.js';
