import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileUriTemplate } from './uri-template-match.ts';

/** What the SDK's matcher says: null when its constructor refuses the template, else whether it matches (a throw from match is no match, as ResourceRoutes took it). */
function sdkMatches(template: string, uri: string): boolean | null {
  let parsed: UriTemplate;
  try {
    parsed = new UriTemplate(template);
  } catch {
    return null;
  }
  try {
    return parsed.match(uri) !== null;
  } catch {
    return false;
  }
}

function ownMatches(template: string, uri: string): boolean | null {
  let matches: (uri: string) => boolean;
  try {
    matches = compileUriTemplate(template);
  } catch {
    return null;
  }
  return matches(uri);
}

const CASES: Array<[template: string, uri: string, matches: boolean]> = [
  ['file:///{path}', 'file:///notes.txt', true],
  ['file:///{path}', 'file:///dir/notes.txt', false],
  ['file:///{+path}', 'file:///dir/notes.txt', true],
  ['users://{id}/profile', 'users://42/profile', true],
  ['users://{id}/profile', 'users://42/settings', false],
  ['users://{id}', 'users://4,2', false],
  ['users://{id*}', 'users://4,2', true],
  ['docs{/section}', 'docs/intro', true],
  ['docs{/section*}', 'docs/a,b', true],
  ['docs{/section}', 'docs', false],
  ['file{.ext}', 'file.txt', true],
  ['file{.ext}', 'file.tar,gz', false],
  ['page{#anchor}', 'pagetop', true],
  ['search{?q,lang}', 'search?q=mcp&lang=en', true],
  ['search{?q,lang}', 'search?q=mcp', false],
  ['search{?q}{&page}', 'search?q=mcp&page=2', true],
  ['a.b{x}', 'aXbY', false],
  ['a(b){x}', 'a(b)y', true],
  ['{a,b}', 'one', true],
  ['{}', 'x', false],
  ['{*}x', 'yx', false],
  ['{?}', '', true],
  ['no-expressions', 'no-expressions', true],
  ['no-expressions', 'no-expression', false],
  ['}{x}', '}y', true],
];

describe('compileUriTemplate', () => {
  it.each(CASES)('%s against %s is %s, as for the SDK', (template, uri, expected) => {
    expect(ownMatches(template, uri)).toBe(expected);
    expect(sdkMatches(template, uri)).toBe(expected);
  });

  it('refuses what the SDK refuses: an unclosed expression, too many expressions', () => {
    for (const template of ['file:///{path', '{a}{b', '{x}'.repeat(10_001)]) {
      expect(ownMatches(template, 'x')).toBeNull();
      expect(sdkMatches(template, 'x')).toBeNull();
    }
  });

  it('matches no over-long URI, as the SDK', () => {
    const uri = `file:///${'a'.repeat(1_000_000)}`;
    expect(ownMatches('file:///{+path}', uri)).toBe(false);
    expect(sdkMatches('file:///{+path}', uri)).toBe(false);
  });

  it('matches in linear time: templates that make a RegExp backtrack without bound are answered at once (review s19)', () => {
    // As RegExps these took 8 s on 54 characters and hours on 200: the worker's one thread, every agent's.
    const uri = `file:///home/alice/${'project/src/components/'.repeat(8)}x.ts`;
    expect(ownMatches('{+a}{+b}{+c}{+d}{+e}{+f}{+g}{+h}!', uri)).toBe(false);
    expect(ownMatches('{a}-{b}-{c}-{d}-{e}-{f}-{g}!', `${'a-'.repeat(100)}a`)).toBe(false);
    expect(ownMatches('file:///{+a}/{+b}/{+c}/{+d}/{+e}/{+f}!', `${uri}!`)).toBe(true);
    expect(ownMatches('{x*}{y*}{z*}.', `${'a,'.repeat(100)}a`)).toBe(false);
  });

  it('matches a long URI within its bound on work, and nothing past it', () => {
    const template = 'file:///{+path}';
    expect(ownMatches(template, `file:///${'a/'.repeat(100_000)}`)).toBe(true);
    expect(ownMatches(template, `file:///${'a/'.repeat(400_000)}`)).toBe(false);
  });

  it('agrees with the SDK on random templates and URIs', () => {
    const piece = fc.constantFrom('{', '}', ',', '*', '+', '#', '.', '/', '?', '&', '=', ':', 'a', 'b', 'id', ' ', '(', '\\', '$', '\n');
    const text = fc.array(piece, { maxLength: 14 }).map((parts) => parts.join(''));
    const uriPiece = fc.constantFrom('/', ',', '.', '?', '&', '=', '#', 'a', 'b', 'id', 'x1', ':', '(', '\\', '$', '', ',,', '\n', '\u2028');
    // URIs made from the template's own text with its expressions filled in match often, random ones rarely: both run.
    const filled = (template: string) => fc.array(uriPiece, { maxLength: 4 }).map((fill) => template.replace(/\{[^}]*\}/g, () => fill.join('')));
    const pair = text.chain((template) => fc.tuple(fc.constant(template), fc.oneof(filled(template), fc.array(uriPiece, { maxLength: 10 }).map((p) => p.join('')))));
    let matched = 0;
    fc.assert(
      fc.property(pair, ([template, uri]) => {
        const own = ownMatches(template, uri);
        if (own === true) matched++;
        expect(own).toBe(sdkMatches(template, uri));
      }),
      { numRuns: 3000 },
    );
    expect(matched).toBeGreaterThan(50);
  });
});
