/**
 * Context windows of well-known models, for runs whose policy names no `model.contextTokens`. The
 * figure is what one request may use in all (input plus the reply bound), so for a family whose input is
 * capped below its window it is that cap (GPT-5: a 400,000-token window, at most 128,000 of it output,
 * so 272,000 of input).
 */

/** The window assumed for a model not listed below: small enough for any current chat model. */
const DEFAULT_CONTEXT_TOKENS = 128_000;

const KNOWN: Readonly<Record<string, number>> = {
  'gpt-4.1': 1_047_576,
  'gpt-4.1-mini': 1_047_576,
  'gpt-4.1-nano': 1_047_576,
  'gpt-4o': 128_000,
  'gpt-4o-mini': 128_000,
  'chatgpt-4o-latest': 128_000,
  'gpt-4-turbo': 128_000,
  'gpt-4': 8_192,
  'gpt-3.5-turbo': 16_385,
  o1: 200_000,
  'o1-mini': 128_000,
  o3: 200_000,
  'o3-mini': 200_000,
  'o3-pro': 200_000,
  'o4-mini': 200_000,
  'gpt-5': 272_000,
  'gpt-5-mini': 272_000,
  'gpt-5-nano': 272_000,
  'gpt-5-chat': 128_000,
};

/**
 * The known window of `model`: its own name or a dated snapshot of it (`gpt-4o-2024-08-06`), with any
 * provider prefix (`openai/gpt-4o`) ignored; the longest listed name that matches wins. Undefined for
 * a model not listed.
 */
function knownContextTokens(model: string): number | undefined {
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  let best: string | undefined;
  for (const known of Object.keys(KNOWN)) {
    const matches = name === known || name.startsWith(`${known}-`);
    if (matches && (best === undefined || known.length > best.length)) best = known;
  }
  return best === undefined ? undefined : KNOWN[best];
}

/** The window of `model`: the policy's figure, else the known one, else DEFAULT_CONTEXT_TOKENS. */
export function contextTokensOf(model: string, configured: number | undefined): number {
  return configured ?? knownContextTokens(model) ?? DEFAULT_CONTEXT_TOKENS;
}
