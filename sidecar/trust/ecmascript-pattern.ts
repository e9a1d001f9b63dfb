/**
 * A JSON Schema `pattern` (ECMAScript syntax, read as with the `u` flag) rewritten so that RE2
 * (re2js) matches exactly what ECMAScript would. RE2 matches in linear time, but three of its
 * classes are narrower or wider than ECMAScript's, and each would widen some rule:
 *
 * - `.` stops only at `\n` in RE2; in ECMAScript at every line terminator (`\r`, U+2028, U+2029);
 * - `\s` is ASCII whitespace in RE2; ECMAScript's also holds U+00A0, U+FEFF, U+2000–U+200A, …;
 * - `\S` is therefore wider in RE2: `^\S+$` would let a no-break space through.
 *
 * They are written out as the classes ECMAScript means. re2js' own translation handles the rest
 * (`\u{…}`, named groups, `[^]`), but turns the back-reference `\k<name>` into the literal text
 * `k<name>`, so a back-reference is refused here, as RE2 refuses `\1`.
 *
 * @module
 */

/** ECMAScript's WhiteSpace and LineTerminator code points, as ranges. */
const WHITESPACE: readonly (readonly [number, number])[] = [
  [0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a], [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff],
];

const LINE_TERMINATORS: readonly (readonly [number, number])[] = [[0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]];

/** The code points `ranges` leave out, up to U+10FFFF. */
function complement(ranges: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = [];
  let next = 0;
  for (const [from, to] of ranges) {
    if (from > next) out.push([next, from - 1]);
    next = to + 1;
  }
  if (next <= 0x10ffff) out.push([next, 0x10ffff]);
  return out;
}

/** Ranges as the inside of a character class, in ECMAScript's `u`-mode escapes. */
const classBody = (ranges: readonly (readonly [number, number])[]) =>
  ranges.map(([from, to]) => (from === to ? `\\u{${from.toString(16)}}` : `\\u{${from.toString(16)}}-\\u{${to.toString(16)}}`)).join('');

const SPACE = classBody(WHITESPACE);
const NOT_SPACE = classBody(complement(WHITESPACE));
const NOT_LINE_TERMINATOR = classBody(complement(LINE_TERMINATORS));

/** A pattern RE2 cannot match as ECMAScript would. */
export class UntranslatablePattern extends Error {}

/**
 * @returns `pattern` with `.`, `\s` and `\S` written as the classes ECMAScript means, for re2js' `translateRegExp`.
 * @throws UntranslatablePattern for a back-reference.
 */
export function withEcmaScriptClasses(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '\\') {
      const next = pattern[i + 1];
      if (next === undefined) return out + char;
      i++;
      if (next === 's') out += inClass ? SPACE : `[${SPACE}]`;
      else if (next === 'S') out += inClass ? NOT_SPACE : `[${NOT_SPACE}]`;
      else if (!inClass && (next === 'k' || (next >= '1' && next <= '9'))) throw new UntranslatablePattern('it holds a back-reference');
      else out += char + next;
      continue;
    }
    if (inClass) {
      if (char === ']') inClass = false;
      out += char;
      continue;
    }
    if (char === '[') {
      inClass = true;
      out += char;
      // `[^]` and `[]`: the `]` right after the opening closes the class, as ECMAScript reads it.
      if (pattern[i + 1] === '^') {
        out += '^';
        i++;
      }
      continue;
    }
    out += char === '.' ? `[${NOT_LINE_TERMINATOR}]` : char;
  }
  return out;
}
