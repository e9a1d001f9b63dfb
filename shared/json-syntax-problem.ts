/**
 * A `JSON.parse` failure as a config problem, without the file's text: V8 quotes up to 21
 * characters around an unexpected token (`Unexpected token 'B', ..."ization": Bearer ghp"... is
 * not valid JSON`), and in a config that is often a credential typed without its quotes. Its
 * position is kept (worked out from the quote when V8 gives none), with the line and column a
 * reader looks for.
 *
 * @module
 */
import { lineAndColumn } from './text-position.ts';

/** V8's context around an unexpected token: this many characters each side of it. */
const CONTEXT = 10;

/**
 * `not valid JSON: <what V8 says, quoting nothing> at position N (line L column C)`, in the words
 * of the worker's own log under Deno.
 *
 * @example
 * ```ts
 * jsonSyntaxProblem(new SyntaxError(`Unexpected token 'B', ..."ization": Bearer ghp"... is not valid JSON`), text);
 * // 'not valid JSON: Unexpected token in JSON at position 33 (line 2 column 32)'
 * ```
 */
export function jsonSyntaxProblem(error: unknown, text: string): string {
  // Said as what it is, which V8 words as an unexpected token: an editor's byte-order mark.
  if (text.startsWith('\uFEFF')) return 'not valid JSON: the file starts with a byte-order mark: save it as UTF-8 without one';
  const message = error instanceof Error ? error.message : String(error);
  if (/ is not valid JSON$/.test(message)) {
    const what = message.startsWith('Unexpected token') ? 'Unexpected token' : 'Not JSON';
    const position = quotedPosition(message, text);
    return `not valid JSON: ${what}${position === undefined ? '' : ` in JSON${where(text, position)}${commentAt(text, position)}`}`;
  }
  // V8's own words, which quote nothing here; Node 20's V8 gives no line and column, Deno's does.
  const position = /at position (\d+)(?!\d| \(line)/.exec(message);
  return `not valid JSON: ${position === null ? message : message.replace(position[0], where(text, Number(position[1])).slice(1)) + commentAt(text, Number(position[1]))}`;
}

/** What a reader is told when the token is a comment, which JSON has none of: the common slip of a config copied from JSONC. */
function commentAt(text: string, position: number): string {
  return text.startsWith('//', position) || text.startsWith('/*', position) ? ': comments are not allowed in JSON' : '';
}

function where(text: string, position: number): string {
  const { line, column } = lineAndColumn(text, position);
  return ` at position ${position} (line ${line} column ${column})`;
}

/** Where V8's quote (`"…"`, `..."…"`, `"…"...`, `..."…"...`) puts the unexpected token. */
function quotedPosition(message: string, text: string): number | undefined {
  const match = /^Unexpected token '([\s\S]*?)', (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/.exec(message);
  if (match === null) return undefined;
  const [, token, before, quote, after] = match;
  if (before === undefined) return after !== undefined ? quote!.length - CONTEXT : undefined; // the whole text (21 characters at most): no position to work out
  // The same 21 characters may come earlier, inside a string: the token is where the text up to
  // it fails as this text did, not as an unfinished string or value.
  for (let start = text.indexOf(quote!); start >= 0; start = text.indexOf(quote!, start + 1)) {
    if (text.startsWith(token!, start + CONTEXT) && failsAt(text.slice(0, start + CONTEXT + token!.length))) return start + CONTEXT;
  }
  return undefined;
}

function failsAt(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return false;
  } catch (error) {
    return (error as Error).message.startsWith('Unexpected token');
  }
}
