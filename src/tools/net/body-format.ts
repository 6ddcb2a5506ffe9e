/** Turns a response body into text a model reads well: JSON indented, HTML reduced to its words. */
import { Tokenizer } from 'htmlparser2';

/**
 * HTML beyond this many characters is not converted (a note says so): the conversion is linear, but a
 * 50 MB page would still hold the worker's CPU for seconds while no timeout or lease renewal can run.
 */
export const MAX_HTML_CHARS = 2_000_000;

/** Elements whose content is not text a reader sees. */
const HIDDEN = new Set(['script', 'style', 'noscript', 'template', 'svg']);

/** Elements that start a new line (open and close tags alike); any other tag separates words. */
const BLOCK = new Set([
  'p',
  'div',
  'br',
  'hr',
  'li',
  'ul',
  'ol',
  'tr',
  'table',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'section',
  'article',
  'header',
  'footer',
  'pre',
  'blockquote',
  'dt',
  'dd',
]);

/** The first `max` characters, not ending in half of a surrogate pair. */
function head(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** Longer names are neither block nor hidden elements, so they are not copied out of the page. */
const LONGEST_NAME = Math.max(...[...BLOCK, ...HIDDEN].map((name) => name.length));

function tagName(html: string, start: number, end: number): string {
  return end - start > LONGEST_NAME ? '' : html.slice(start, end).toLowerCase();
}

/**
 * Collects text as ranges of the page, merging adjacent ones, and separators collapsed as the final
 * whitespace rules would collapse them anyway: a hostile page of a million tiny tokens makes a few parts.
 */
class TextParts {
  private readonly parts: string[] = [];
  private from = 0;
  private to = 0;
  /** Newlines (at most 2, more collapse to 2) or a space waiting for the next text. */
  private newlines = 0;
  private space = false;

  constructor(private readonly source: string) {}

  range(start: number, end: number): void {
    if (start !== this.to || this.newlines > 0 || this.space) this.flush();
    if (this.from === this.to) this.from = start;
    this.to = end;
  }

  literal(text: string): void {
    this.flush();
    this.parts.push(text);
  }

  separator(newline: boolean): void {
    if (newline) this.newlines = Math.min(this.newlines + 1, 2);
    else this.space = true;
  }

  text(): string {
    this.flush();
    return this.parts.join('');
  }

  private flush(): void {
    if (this.from !== this.to) this.parts.push(this.source.slice(this.from, this.to));
    this.from = this.to = 0;
    if (this.newlines > 0) this.parts.push('\n'.repeat(this.newlines));
    else if (this.space) this.parts.push(' ');
    this.newlines = 0;
    this.space = false;
  }
}

/**
 * The text of `html` in document order, with a newline for each block tag and a space for any other tag
 * or comment. Uses htmlparser2's tokenizer alone (one pass, no element stack): its parser keeps open
 * elements in an array it shifts and searches, which is quadratic on deeply nested or unclosed tags.
 */
function htmlWords(html: string): string {
  const out = new TextParts(html);
  let tag = '';
  /** The hidden element being skipped and how many of it are open (`<svg>` inside `<svg>`). */
  let hidden = '';
  let hiddenDepth = 0;
  const mark = (name: string) => out.separator(BLOCK.has(name));
  const openTagEnd = () => {
    if (hidden !== '') {
      if (tag === hidden) hiddenDepth++;
      return;
    }
    if (HIDDEN.has(tag)) {
      hidden = tag;
      hiddenDepth = 1;
    }
    mark(tag);
  };
  const tokenizer = new Tokenizer(
    {},
    {
      ontext(start, end) {
        if (hidden === '') out.range(start, end);
      },
      ontextentity(codePoint) {
        if (hidden === '') out.literal(String.fromCodePoint(codePoint));
      },
      onopentagname(start, end) {
        tag = tagName(html, start, end);
      },
      onopentagend: openTagEnd,
      // `/>` closes only foreign elements such as `<svg/>`; HTML ignores it (`<script/>` still opens).
      onselfclosingtag() {
        if (tag !== 'svg') openTagEnd();
        else if (hidden === '') mark(tag);
      },
      onclosetag(start, end) {
        const name = tagName(html, start, end);
        if (hidden === '') mark(name);
        else if (name === hidden && --hiddenDepth === 0) hidden = '';
      },
      oncomment() {
        if (hidden === '') out.separator(false);
      },
      oncdata() {
        if (hidden === '') out.separator(false);
      },
      onattribdata() {},
      onattribentity() {},
      onattribend() {},
      onattribname() {},
      ondeclaration() {},
      onprocessinginstruction() {},
      onend() {},
    },
  );
  tokenizer.write(html);
  tokenizer.end();
  return out.text();
}

/** Readable text of an HTML page: no scripts, styles or tags; entities decoded; whitespace collapsed. */
export function htmlToText(html: string): string {
  const text = htmlWords(head(html, MAX_HTML_CHARS))
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v\r\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  if (html.length <= MAX_HTML_CHARS) return text;
  return `${text}\n\n[only the first ${MAX_HTML_CHARS} characters of this HTML page were converted to text]`;
}

/**
 * JSON is indented only while the indented text stays this short: indenting adds a line and two spaces
 * per nesting level for each value, so 1 MB of deeply nested arrays would grow to gigabytes (and nesting
 * beyond a few thousand levels overflows the stack on the way).
 */
export const MAX_INDENTED_JSON_CHARS = 4_000_000;

/** An upper bound of the length of `text` indented by two spaces, from one pass over its characters. */
function indentedLength(text: string): number {
  let length = text.length;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b)
      length += 1 + 2 * ++depth; // [ {: a new line for the first value
    else if (c === 0x2c)
      length += 1 + 2 * depth; // , : a new line for the next value
    else if (c === 0x5d || c === 0x7d)
      length += 1 + 2 * --depth; // ] }: a new line for the bracket
    else if (c === 0x3a) length += 1; // : gets a space
    if (length > MAX_INDENTED_JSON_CHARS) return length;
  }
  return length;
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

function isJson(contentType: string | undefined): boolean {
  const type = mediaType(contentType);
  return type === 'application/json' || type.endsWith('+json');
}

/** JSON pretty-printed (raw when it does not parse), HTML as text, anything else unchanged. */
export function formatBody(text: string, contentType: string | undefined): string {
  const type = mediaType(contentType);
  if (isJson(contentType)) {
    if (indentedLength(text) > MAX_INDENTED_JSON_CHARS) return text;
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text;
    }
  }
  if (type === 'text/html' || type === 'application/xhtml+xml') return htmlToText(text);
  return text;
}
