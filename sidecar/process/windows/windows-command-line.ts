/**
 * Windows command-line quoting for launching `.cmd` / `.bat` files (npm's `npx.cmd` shims)
 * through `%ComSpec% /d /s /c "<line>"` without a shell-injection hole.
 *
 * A batch file's arguments are parsed three times before the program behind the shim sees them:
 * cmd.exe parses the `/c` line (percent expansion, then `^` escapes and quotes), the shim's
 * `%*` is substituted into its own command line and cmd.exe parses *that* again, and finally the
 * program's C runtime splits its command line with the CommandLineToArgvW rules. So each argument
 * is (1) quoted for CommandLineToArgvW, (2) caret-escaped twice, once per cmd.exe pass (as
 * cross-spawn's `escapeArgument(arg, true)` does for cmd shims), and (3) every `%` is written as
 * `%%cd:~,%`: a literal `%` followed by an expansion that is always empty, the escape Rust's
 * standard library adopted for batch arguments after CVE-2024-24576. Carets alone do not stop
 * `%PATH:a=b%` from expanding.
 *
 * @module
 */
import { LocalError } from '../../../shared/errors.ts';

/** Characters cmd.exe treats specially outside quotes (cross-spawn's set, `%` handled apart). */
const CMD_META = /[()[\]!^"`<>&|;, *?]/g;
/** A `%` that cmd.exe leaves literal in command-line mode: `%%` is no variable, `%cd:~,%` is empty. */
const LITERAL_PERCENT = '%%cd:~,%';

/**
 * Quotes one argument so CommandLineToArgvW (and the MSVC C runtime) reads it back unchanged:
 * backslashes are doubled only where they precede a quote or the closing quote, quotes are
 * backslash-escaped, and the whole is wrapped in quotes (so an empty argument survives).
 *
 * @example Quoting a path with a trailing backslash
 * ```ts
 * quoteWindowsArgument('C:\\dir name\\'); // => '"C:\\dir name\\\\"'
 * ```
 */
export function quoteWindowsArgument(arg: string): string {
  let out = '"';
  let backslashes = 0;
  for (const ch of arg) {
    if (ch === '\\') {
      backslashes += 1;
      continue;
    }
    if (ch === '"') out += '\\'.repeat(backslashes * 2 + 1) + '"';
    else out += '\\'.repeat(backslashes) + ch;
    backslashes = 0;
  }
  return `${out}${'\\'.repeat(backslashes * 2)}"`;
}

/** Prefixes each cmd.exe metacharacter with `^`, `passes` times over; `%` becomes `%%cd:~,%`. */
function escapeForCmd(text: string, passes: number): string {
  let escaped = text;
  for (let i = 0; i < passes; i++) escaped = escaped.replace(CMD_META, '^$&');
  return escaped.replace(/%/g, LITERAL_PERCENT);
}

function assertSafe(text: string, what: string): void {
  if (/[\r\n\0]/.test(text)) {
    throw new LocalError('unsafe-argument', `Cannot pass ${what} to a batch file: it contains a line break or NUL, which cmd.exe cannot quote`);
  }
}

/**
 * The command line for `cmd.exe /d /s /c "<line>"` that runs batch file `file` with `args`,
 * such that a program the batch file starts with `%*` receives exactly `args`. Throws a
 * LocalError `'unsafe-argument'` for line breaks and NULs, which no quoting can carry.
 *
 * @example Running npx.cmd
 * ```ts
 * buildCmdShimLine('C:\\nodejs\\npx.cmd', ['-y', 'a&b']);
 * // => '"C:\\nodejs\\npx.cmd" ^^^"-y^^^" ^^^"a^^^&b^^^"'
 * ```
 */
export function buildCmdShimLine(file: string, args: readonly string[]): string {
  assertSafe(file, 'the batch file path');
  if (file.includes('"')) throw new LocalError('unsafe-argument', 'Cannot run a batch file whose path contains a double quote');
  const parts = [`"${file.replace(/%/g, LITERAL_PERCENT)}"`];
  for (const arg of args) {
    assertSafe(arg, 'an argument');
    parts.push(escapeForCmd(quoteWindowsArgument(arg), 2));
  }
  return parts.join(' ');
}

/** The `cmd.exe` arguments (to be passed verbatim) that run batch file `file` with `args`. */
export function cmdShimArguments(file: string, args: readonly string[]): string[] {
  return ['/d', '/s', '/c', `"${buildCmdShimLine(file, args)}"`];
}
