/**
 * Whether a resource URI matches a server's resource template (RFC 6570 syntax), for routing
 * reads on the aggregate endpoint. The template is compiled into one RegExp when the server lists
 * it (the MCP SDK's `UriTemplate` builds it again on every match), and it accepts exactly what
 * `UriTemplate.match` accepts: uri-template-match.test.ts checks that against the SDK, case by
 * case and on random templates. The SDK class also expands templates, which the worker never
 * does; matching alone is 2 KB less of dist/worker.js (issue 17).
 *
 * @module
 */

/** The SDK's bounds: longer templates and URIs, or more expressions, match nothing. */
const MAX_LENGTH = 1_000_000;
const MAX_EXPRESSIONS = 10_000;
const OPERATORS = ['+', '#', '.', '/', '?', '&'];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The RegExp source for one `{…}` expression's inside; undefined for one that never matches. */
function expressionPattern(expression: string): string | undefined {
  const operator = OPERATORS.find((op) => expression.startsWith(op)) ?? '';
  const names = expression
    .slice(operator.length)
    .split(',')
    .map((name) => name.replace('*', '').trim())
    .filter((name) => name.length > 0);
  if (operator === '?' || operator === '&') return names.map((name, i) => `${i === 0 ? `\\${operator}` : '&'}${escapeRegExp(name)}=([^&]+)`).join('');
  // The SDK fails on a match of a nameless expression (`{}`, `{*}`), which routes nothing.
  if (names.length === 0) return undefined;
  const segment = expression.includes('*') ? '([^/,]+(?:,[^/,]+)*)' : '([^/,]+)';
  if (operator === '.') return '\\.([^/,]+)';
  if (operator === '/') return `/${segment}`;
  return operator === '' ? segment : '(.+)';
}

/** A matcher for `template`; throws for one that does not parse (an unclosed `{`, too long, too many expressions). */
export function compileUriTemplate(template: string): (uri: string) => boolean {
  if (template.length > MAX_LENGTH) throw new Error(`Template exceeds ${MAX_LENGTH} characters`);
  let pattern = '^';
  let expressions = 0;
  let matchable = true;
  for (let at = 0; at < template.length; ) {
    const open = template.indexOf('{', at);
    if (open === -1) {
      pattern += escapeRegExp(template.slice(at));
      break;
    }
    pattern += escapeRegExp(template.slice(at, open));
    const close = template.indexOf('}', open);
    if (close === -1) throw new Error('Unclosed template expression');
    if (++expressions > MAX_EXPRESSIONS) throw new Error(`Template has more than ${MAX_EXPRESSIONS} expressions`);
    const part = expressionPattern(template.slice(open + 1, close));
    if (part === undefined) matchable = false;
    else pattern += part;
    at = close + 1;
  }
  pattern += '$';
  if (!matchable || pattern.length > MAX_LENGTH) return () => false;
  const regex = new RegExp(pattern);
  return (uri) => uri.length <= MAX_LENGTH && regex.test(uri);
}
