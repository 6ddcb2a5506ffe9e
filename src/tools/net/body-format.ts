/** Turns a response body into text a model reads well: JSON indented, HTML reduced to its words. */

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  copy: '©',
  reg: '®',
  trade: '™',
  laquo: '«',
  raquo: '»',
  rsquo: '’',
  lsquo: '‘',
  rdquo: '”',
  ldquo: '“',
  bull: '•',
  middot: '·',
};

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code =
        name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

const BLOCK =
  /<\/?(?:p|div|br|hr|li|ul|ol|tr|table|h[1-6]|section|article|header|footer|pre|blockquote|dt|dd)\b[^>]*>/gi;

/** Readable text of an HTML page: no scripts, styles or tags; entities decoded; whitespace collapsed. */
export function htmlToText(html: string): string {
  const withoutCode = html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style|noscript|template|svg)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<(script|style|noscript|template|svg)\b[\s\S]*$/gi, ' ');
  const text = decodeEntities(withoutCode.replace(BLOCK, '\n').replace(/<[^>]*>/g, ' '));
  return text
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v\r\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function charset(contentType: string | undefined): string {
  const match = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '');
  return match?.[1] ?? 'utf-8';
}

export function decodeBody(body: Buffer, contentType: string | undefined): string {
  try {
    return new TextDecoder(charset(contentType)).decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

export function isJson(contentType: string | undefined): boolean {
  const type = mediaType(contentType);
  return type === 'application/json' || type.endsWith('+json');
}

/** JSON pretty-printed (raw when it does not parse), HTML as text, anything else unchanged. */
export function formatBody(text: string, contentType: string | undefined): string {
  const type = mediaType(contentType);
  if (isJson(contentType)) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text;
    }
  }
  if (type === 'text/html' || type === 'application/xhtml+xml') return htmlToText(text);
  return text;
}
