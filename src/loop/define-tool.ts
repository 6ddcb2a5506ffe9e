import type { z } from 'zod';
import type { AnyTool, Tool } from './tool-contract.js';

/** Identity with inference: `defineTool({ parameters: z.object(...), execute(args) {...} })` types `args`. */
export function defineTool<P extends z.ZodType, R>(tool: Tool<P, R>): AnyTool {
  return tool as AnyTool;
}
