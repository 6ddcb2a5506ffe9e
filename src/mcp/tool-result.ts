/**
 * MCP tool results as observations: text as text, structured content as data, embedded resources with
 * their URI (binary ones as a note), images and audio as a note only (the model gets no pixels). Each
 * text part is cut before it is joined, so a 10 MB reply costs no more than the engine's bound; the engine
 * then bounds the whole observation like any other tool's. `isError` becomes a failed result.
 */
import { ToolError } from '../tools/errors.js';

/** Longest text part kept before joining; the engine's `maxObservationChars` bounds the rest. */
export const MAX_PART_CHARS = 1_000_000;

type ContentPart = { type: string; [key: string]: unknown };

export interface CallResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}

const cut = (text: string) =>
  text.length <= MAX_PART_CHARS
    ? text
    : `${text.slice(0, MAX_PART_CHARS)}…[cut by loopgate: ${text.length} characters in all]`;

const base64Bytes = (data: unknown) => (typeof data === 'string' ? Math.floor((data.length * 3) / 4) : 0);

function resourceText(resource: Record<string, unknown>): string {
  const uri = String(resource.uri ?? '(no uri)');
  const mime = typeof resource.mimeType === 'string' ? ` (${resource.mimeType})` : '';
  if (typeof resource.text === 'string') return `[resource ${uri}${mime}]\n${cut(resource.text)}`;
  return `[resource ${uri}${mime}: ${base64Bytes(resource.blob)} bytes of binary data, not shown]`;
}

/** One content part as text the model can read. */
function partText(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return cut(String(part.text ?? ''));
    case 'image':
    case 'audio':
      return `[${part.type} (${String(part.mimeType ?? 'unknown type')}), ${base64Bytes(part.data)} bytes: not shown to the model]`;
    case 'resource':
      return resourceText((part.resource ?? {}) as Record<string, unknown>);
    case 'resource_link':
      return `[resource link ${String(part.uri ?? '')}${part.name ? ` (${String(part.name)})` : ''}]`;
    default:
      return `[content of type ${part.type}: not shown]`;
  }
}

function parts(result: CallResult): ContentPart[] {
  if (!Array.isArray(result.content)) return [];
  return result.content.filter(
    (p): p is ContentPart => p !== null && typeof p === 'object' && typeof p.type === 'string',
  );
}

/**
 * The observation data of a result: the joined text alone when that is all there is, else
 * `{ text, structuredContent }`.
 * @throws ToolError `mcp_tool_error` when the server flagged the result as an error.
 */
export function resultData(result: CallResult, toolName: string): unknown {
  const text = parts(result).map(partText).join('\n');
  if (result.isError === true) {
    throw new ToolError(
      'mcp_tool_error',
      `${toolName} reported an error: ${text.slice(0, 4_000) || '(no message)'}`,
    );
  }
  if (result.structuredContent === undefined) return text;
  return text === ''
    ? { structuredContent: result.structuredContent }
    : { text, structuredContent: result.structuredContent };
}
