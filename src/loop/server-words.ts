/**
 * What a model server said when it refused a request, made safe to show people and to store in a trace:
 * the API key loopgate sent, bearer tokens and anything shaped like an API key are replaced by
 * `[redacted]` (some servers and gateways echo the request's headers or key in their errors), and the text
 * is bounded.
 */

const MAX_CHARS = 1_000;

/** Shapes of secrets a server may echo: OpenAI-style keys, bearer tokens, `api_key=` parameters. */
const SECRET_SHAPES: readonly RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b(api[_-]?key|token|secret|password)(["']?\s*[:=]\s*["']?)[^\s"',}]{4,}/gi,
];

export function redactServerWords(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) {
    // Short values (such as a local server's placeholder key "x") would blank ordinary words.
    if (secret.length >= 6) out = out.split(secret).join('[redacted]');
  }
  for (const shape of SECRET_SHAPES) {
    out = out.replace(shape, (_match, name?: string, sep?: string) =>
      typeof name === 'string' && typeof sep === 'string' ? `${name}${sep}[redacted]` : '[redacted]',
    );
  }
  return out.length > MAX_CHARS ? `${out.slice(0, MAX_CHARS)}…` : out;
}
