import { describe, expect, it } from 'vitest';
import { nonPublicKind } from '../../src/tools/net/address-rules.js';
import { decodeEntities, formatBody, htmlToText } from '../../src/tools/net/body-format.js';
import { findAllowEntry, normalisePrefix } from '../../src/tools/net/url-allowlist.js';

describe('address rules', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fd12:3456::1', 'unique local'],
    ['fe80::1', 'link-local'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['[::1]', 'loopback'],
    ['not-an-ip', 'invalid'],
  ])('%s is %s', (address, kind) => {
    expect(nonPublicKind(address)).toBe(kind);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:808:808'])(
    '%s is public',
    (address) => {
      expect(nonPublicKind(address)).toBeNull();
    },
  );
});

describe('URL allowlist', () => {
  const entries = [
    { prefix: normalisePrefix('https://status.example/api')! },
    { prefix: normalisePrefix('https://status.example/docs/')! },
  ];
  const allowed = (url: string) => findAllowEntry(new URL(url), entries) !== undefined;

  it('matches on path segment boundaries', () => {
    expect(allowed('https://status.example/api')).toBe(true);
    expect(allowed('https://status.example/api/v1?x=1')).toBe(true);
    expect(allowed('https://status.example/api-admin')).toBe(false);
    expect(allowed('https://status.example/docs/a')).toBe(true);
    expect(allowed('https://status.example/docs')).toBe(false);
  });

  it('requires the same scheme, host and port', () => {
    expect(allowed('http://status.example/api')).toBe(false);
    expect(allowed('https://status.example:8443/api')).toBe(false);
    expect(allowed('https://status.example.evil.test/api')).toBe(false);
    expect(allowed('https://status.example:443/api')).toBe(true);
  });

  it('resolves dot segments and refuses credentials', () => {
    expect(allowed('https://status.example/api/../admin')).toBe(false);
    expect(allowed('https://status.example/api/%2e%2e/admin')).toBe(false);
    expect(allowed('https://user:pw@status.example/api')).toBe(false);
  });

  it('accepts only plain http(s) prefixes', () => {
    expect(normalisePrefix('ftp://x/')).toBeUndefined();
    expect(normalisePrefix('https://u:p@x/')).toBeUndefined();
    expect(normalisePrefix('https://x/?q=1')).toBeUndefined();
    expect(normalisePrefix('status.example')).toBeUndefined();
    expect(normalisePrefix('https://X.example')).toBe('https://x.example/');
  });
});

describe('body formatting', () => {
  it('decodes named and numeric entities', () => {
    expect(decodeEntities('a &amp; b &lt;c&gt; &#39;d&#x27; &unknown;')).toBe("a & b <c> 'd' &unknown;");
  });

  it('keeps block structure as lines and drops comments and templates', () => {
    const text = htmlToText(
      '<div>one</div><!-- hidden --><ul><li>two</li><li>three</li></ul><template>x</template>',
    );
    expect(text).toBe('one\n\ntwo\n\nthree');
  });

  it('drops an unterminated script', () => {
    expect(htmlToText('<p>shown</p><script>var a = 1;')).toBe('shown');
  });

  it('returns invalid JSON unchanged and plain text as is', () => {
    expect(formatBody('{not json', 'application/json')).toBe('{not json');
    expect(formatBody('{"a":1}', 'application/problem+json; charset=utf-8')).toBe('{\n  "a": 1\n}');
    expect(formatBody('<b>x</b>', 'text/plain')).toBe('<b>x</b>');
  });
});
