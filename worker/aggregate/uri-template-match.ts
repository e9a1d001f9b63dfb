/**
 * Whether a resource URI matches a server's resource template (RFC 6570 syntax), for routing
 * reads on the aggregate endpoint. The template is compiled once, when the server lists it, into
 * steps matched in linear time (a RegExp of the same source, as the MCP SDK's `UriTemplate` builds,
 * backtracks without bound on templates a server chooses), and it accepts exactly what
 * `UriTemplate.match` accepts, within a bound on the work of one match: uri-template-match.test.ts
 * checks that against the SDK, case by case and on random templates. The SDK class also expands
 * templates, which the worker never does; matching alone is 2 KB less of dist/worker.js (issue 17).
 *
 * @module
 */

/** The SDK's bounds: longer templates and URIs, or more expressions, match nothing. */
const MAX_LENGTH = 1_000_000;
const MAX_EXPRESSIONS = 10_000;
const OPERATORS = ['+', '#', '.', '/', '?', '&'];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What one expression matches, as steps of `matchSteps`: a literal, or a run of one or more
 * characters of a class (`run`), or `list`: an exploded segment, runs of `[^/,]` joined by single
 * commas. `source` is the step as the SDK's RegExp source spells it, whose length bounds a template.
 */
type Step = ({ literal: string } | { run: (code: number) => boolean } | { list: true }) & { source: string };

/** `.`: any UTF-16 unit but a line terminator. */
const ANY_BUT_LINE_END = (c: number) => c !== 10 && c !== 13 && c !== 0x2028 && c !== 0x2029;
/** `[^/,]` */
const SEGMENT = (c: number) => c !== 47 && c !== 44;
/** `[^&]` */
const QUERY_VALUE = (c: number) => c !== 38;

const literal = (text: string, source = escapeRegExp(text)): Step => ({ literal: text, source });

/** The steps of one `{…}` expression's inside; undefined for one that never matches. */
function expressionSteps(expression: string): Step[] | undefined {
  const operator = OPERATORS.find((op) => expression.startsWith(op)) ?? '';
  const names = expression
    .slice(operator.length)
    .split(',')
    .map((name) => name.replace('*', '').trim())
    .filter((name) => name.length > 0);
  if (operator === '?' || operator === '&') {
    return names.flatMap((name, i) => [literal(`${i === 0 ? operator : '&'}${name}=`, `${i === 0 ? `\\${operator}` : '&'}${escapeRegExp(name)}=`), { run: QUERY_VALUE, source: '([^&]+)' }]);
  }
  // The SDK fails on a match of a nameless expression (`{}`, `{*}`), which routes nothing.
  if (names.length === 0) return undefined;
  const segment: Step = expression.includes('*') ? { list: true, source: '([^/,]+(?:,[^/,]+)*)' } : { run: SEGMENT, source: '([^/,]+)' };
  if (operator === '.') return [literal('.'), { run: SEGMENT, source: '([^/,]+)' }];
  if (operator === '/') return [literal('/'), segment];
  return [operator === '' ? segment : { run: ANY_BUT_LINE_END, source: '(.+)' }];
}

/**
 * The most `uri.length × template.length` a match may cost: its steps are linear in both (the
 * literals' comparisons are what the template's length bounds). A URI past it for its template
 * matches nothing: 4 M units of work, a few ms, and 20 000 characters for a 200-character template.
 */
export const MATCH_WORK = 1 << 22;

/**
 * A matcher for `template`; throws for one that does not parse (an unclosed `{`, too long, too
 * many expressions). It runs in time linear in the URI for each step of the template: a RegExp
 * of the same source backtracks, and a server's template like `{+a}{+b}{+c}{+d}{+e}!` held the
 * worker's one thread for 3 s on a 200-character URI (review s19), every agent's sessions with it.
 */
export function compileUriTemplate(template: string): (uri: string) => boolean {
  if (template.length > MAX_LENGTH) throw new Error(`Template exceeds ${MAX_LENGTH} characters`);
  const steps: Step[] = [];
  let expressions = 0;
  let matchable = true;
  const text = (part: string) => {
    if (part.length > 0) steps.push(literal(part));
  };
  for (let at = 0; at < template.length; ) {
    const open = template.indexOf('{', at);
    if (open === -1) {
      text(template.slice(at));
      break;
    }
    text(template.slice(at, open));
    const close = template.indexOf('}', open);
    if (close === -1) throw new Error('Unclosed template expression');
    if (++expressions > MAX_EXPRESSIONS) throw new Error(`Template has more than ${MAX_EXPRESSIONS} expressions`);
    const parts = expressionSteps(template.slice(open + 1, close));
    if (parts === undefined) matchable = false;
    else steps.push(...parts);
    at = close + 1;
  }
  // The RegExp source's length (with its `^` and `$`) still bounds a template, as in the SDK.
  const sourceLength = steps.reduce((sum, step) => sum + step.source.length, 2);
  if (!matchable || sourceLength > MAX_LENGTH) return () => false;
  const cost = template.length + 1;
  return (uri) => uri.length <= MAX_LENGTH && (uri.length + 1) * cost <= MATCH_WORK && matchSteps(steps, uri);
}

/**
 * Whether `uri` is exactly `steps`, one after another: the set of positions each step can end at,
 * from those the one before it ended at (a Thompson simulation, no backtracking).
 */
function matchSteps(steps: readonly Step[], uri: string): boolean {
  const n = uri.length;
  let reach = new Uint8Array(n + 1);
  reach[0] = 1;
  for (const step of steps) {
    const next = new Uint8Array(n + 1);
    let any = false;
    if ('literal' in step) {
      const text = step.literal;
      for (let p = 0; p + text.length <= n; p++) {
        if (reach[p] === 1 && uri.startsWith(text, p)) {
          next[p + text.length] = 1;
          any = true;
        }
      }
    } else if ('run' in step) {
      const allowed = step.run;
      // next[q + 1]: a run of allowed units from a reached position ends just past q.
      for (let q = 0; q < n; q++) {
        if ((reach[q] === 1 || next[q] === 1) && allowed(uri.charCodeAt(q))) {
          next[q + 1] = 1;
          any = true;
        }
      }
    } else {
      // `[^/,]+(?:,[^/,]+)*`: after a unit of the segment (next, accepting) or after a comma (afterComma).
      const afterComma = new Uint8Array(n + 1);
      for (let q = 0; q < n; q++) {
        const c = uri.charCodeAt(q);
        if (c === 44) {
          if (next[q] === 1) afterComma[q + 1] = 1;
        } else if (c !== 47 && (reach[q] === 1 || next[q] === 1 || afterComma[q] === 1)) {
          next[q + 1] = 1;
          any = true;
        }
      }
    }
    if (!any) return false;
    reach = next;
  }
  return reach[n] === 1;
}
