/**
 * `import { defineTool } from 'loopgate'`: the public API of loopgate, for tools written outside it. This
 * file only re-exports (test/architecture checks it); everything not named here is internal and may
 * change in any release.
 */

export { ToolFailure, ToolInputError, TransientToolError } from '../tools/custom/errors.js';
export type {
  AnyCustomTool,
  HttpRequestOptions,
  HttpResponse,
  Logger,
  Requester,
  RetryPolicy,
  Tool,
  ToolContext,
  ToolEffect,
  ToolHttp,
  VerifyResult,
} from '../tools/custom/tool-api.js';
export { defineTool } from '../tools/custom/tool-api.js';
