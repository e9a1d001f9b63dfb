import { describe, expect, it } from 'vitest';
import { LocalError } from '../../../shared/errors.ts';
import { resolveStdioCommand } from '../stdio-command-resolver.ts';
import { buildCmdShimLine, quoteWindowsArgument } from './windows-command-line.ts';

/*
 * A reference model of what Windows does with `cmd.exe /d /s /c "<line>"` that runs an npm cmd
 * shim, written from the documented parsing rules, not from the encoder:
 *
 *  1. cmd.exe /S: the first and the last quote of the text after /C are removed.
 *  2. Phase 1, percent expansion in command-line mode: `%name%` / `%name:~s,l%` / `%name:a=b%`
 *     expand when `name` is defined (case-insensitive; `CD` is the dynamic current directory);
 *     otherwise the first `%` stays literal and scanning resumes at the second `%`.
 *  3. Phase 2, outside quotes: `^` makes the next character literal (an escaped `"` does not
 *     toggle quoting), `& | < > ( )` are operators, a trailing `^` continues the line. Inside
 *     quotes everything is literal. Carets that escape are removed.
 *  4. The first token is the batch file; the rest of the line (carets removed) becomes `%*`.
 *  5. The npm shim runs `"%NODE_EXE%" "%NPX_CLI_JS%" %*`: `%*` is substituted once and not
 *     rescanned for `%`, and the line goes through phase 2 again (it may sit in an `IF (…)` block).
 *  6. node.exe splits its command line with the CommandLineToArgvW rules: 2n backslashes + `"`
 *     → n backslashes and a quote toggle, 2n+1 backslashes + `"` → n backslashes and a literal
 *     `"`, other backslashes literal; whitespace splits outside quotes; argv[0] is read up to
 *     the closing quote or first whitespace, without backslash rules.
 *
 * Any operator left unescaped outside quotes in either phase 2 is an injection: the model throws.
 */

const ENV = { PATH: 'C:\\Windows;C:\\Program Files (x86)\\tools', USERNAME: 'victim', ComSpec: 'C:\\Windows\\System32\\cmd.exe' };
const CWD = 'C:\\work & play';
const NODE_EXE = 'C:\\Program Files\\nodejs\\node.exe';
const NPX_CLI = 'C:\\Program Files\\nodejs\\node_modules\\npm\\bin\\npx-cli.js';

class Injection extends Error {}

function variable(name: string): string | undefined {
  if (name.toUpperCase() === 'CD') return CWD;
  const key = Object.keys(ENV).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : ENV[key as keyof typeof ENV];
}

/** The value `%expr%` expands to, or undefined when cmd.exe leaves it as text. */
function expand(expr: string): string | undefined {
  if (expr === '') return undefined;
  const colon = expr.indexOf(':');
  const value = variable(colon === -1 ? expr : expr.slice(0, colon));
  if (value === undefined || colon === -1) return value;
  const modifier = expr.slice(colon + 1);
  const substring = /^~(-?\d*)(?:(,)(-?\d*))?$/.exec(modifier);
  if (substring) {
    const start = Number(substring[1] || 0);
    const from = start < 0 ? Math.max(0, value.length + start) : Math.min(start, value.length);
    if (substring[2] === undefined) return value.slice(from);
    const length = Number(substring[3] || 0);
    return length < 0 ? value.slice(from, Math.max(from, value.length + length)) : value.slice(from, from + length);
  }
  const eq = modifier.indexOf('=');
  if (eq > 0) {
    const search = modifier.slice(0, eq).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return value.replace(new RegExp(search, 'gi'), modifier.slice(eq + 1));
  }
  throw new Error(`Model does not cover the expansion %${expr}%`);
}

function percentPhase(line: string): string {
  let out = '';
  for (let i = 0; i < line.length; ) {
    const close = line[i] === '%' ? line.indexOf('%', i + 1) : -1;
    const value = close === -1 ? undefined : expand(line.slice(i + 1, close));
    if (value === undefined) {
      out += line[i];
      i += 1;
    } else {
      out += value;
      i = close + 1;
    }
  }
  return out;
}

interface Char {
  readonly c: string;
  readonly literal: boolean;
}

function caretPhase(line: string): Char[] {
  const out: Char[] = [];
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quoted) {
      if (c === '"') quoted = false;
      out.push({ c, literal: c !== '"' });
    } else if (c === '^') {
      if (i + 1 >= line.length) throw new Injection('A trailing caret continues the line');
      out.push({ c: line[++i] as string, literal: true });
    } else if ('&|<>()'.includes(c)) {
      throw new Injection(`Operator "${c}" outside quotes at ${i} in: ${line}`);
    } else {
      if (c === '"') quoted = true;
      out.push({ c, literal: false });
    }
  }
  return out;
}

const DELIMITERS = ' \t,;=';

/** What the npm shim's node.exe receives as argv when cmd.exe is given `cmdArgs`. */
function decodeCmdShim(comSpec: string, cmdArgs: readonly string[]): { batch: string; argv: string[] } {
  const commandLine = [comSpec, ...cmdArgs].join(' '); // verbatim: libuv joins without quoting
  const afterC = /^\S+ \/d \/s \/c (.*)$/i.exec(commandLine)?.[1];
  if (afterC === undefined || !afterC.startsWith('"')) throw new Error('Expected /d /s /c "…"');
  const stripped = afterC.slice(1, afterC.lastIndexOf('"')) + afterC.slice(afterC.lastIndexOf('"') + 1);
  const chars = caretPhase(percentPhase(stripped));
  let i = 0;
  let batch = '';
  while (i < chars.length && !(DELIMITERS.includes(chars[i]!.c) && !chars[i]!.literal)) {
    if (chars[i]!.c !== '"' || chars[i]!.literal) batch += chars[i]!.c;
    i++;
  }
  while (i < chars.length && DELIMITERS.includes(chars[i]!.c) && !chars[i]!.literal) i++;
  const percentStar = chars.slice(i).map((ch) => ch.c).join('');
  const shimLine = `"${NODE_EXE}" "${NPX_CLI}" ${percentStar}`;
  const finalLine = caretPhase(shimLine).map((ch) => ch.c).join('');
  return { batch, argv: commandLineToArgv(finalLine) };
}

function commandLineToArgv(line: string): string[] {
  let i = line.startsWith('"') ? line.indexOf('"', 1) + 1 || line.length : line.search(/[ \t]|$/);
  const argv = [line.startsWith('"') ? line.slice(1, i - 1) : line.slice(0, i)];
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (i >= line.length) return argv;
    let arg = '';
    let quoted = false;
    while (i < line.length && (quoted || (line[i] !== ' ' && line[i] !== '\t'))) {
      if (line[i] === '\\') {
        let n = 0;
        while (line[i] === '\\') (n += 1), (i += 1);
        arg += '\\'.repeat(line[i] === '"' ? n >> 1 : n);
        if (line[i] === '"' && n % 2 === 1) (arg += '"'), (i += 1);
      } else if (line[i] === '"') {
        if (quoted && line[i + 1] === '"') (arg += '"'), (i += 2);
        else (quoted = !quoted), (i += 1);
      } else {
        arg += line[i++];
      }
    }
    argv.push(arg);
  }
}

const HOSTILE = [
  '', ' ', 'plain', 'two words', 'tab\there', '"', '""', 'he said "hi"', 'C:\\dir\\', 'C:\\dir name\\', '\\\\server\\share\\',
  'a\\"b', 'a\\\\"b', 'trailing\\\\', '&calc', 'a & b', 'a|b', 'a^b', '^', '^^', '<in', 'out>', '(x)', ')', '%PATH%', '%path%',
  '%PATH:a=b%', '%PATH:~0,1%', '%USERNAME%', '%CD%', '%cd:~,%', '100%', '%', '%%', '%%cd:~,%', '!PATH!', 'a,b;c=d', '*?',
  '`whoami`', '[x]', 'éàü 日本語 🚀', '" & calc & "', '^" & calc & ^"', '\\" & calc', 'x"^&calc^&"y', '--flag="a b"',
];

const FILES = new Set(['c:\\program files\\nodejs\\npx.cmd', 'c:\\program files\\nodejs\\node.exe']);
const context = {
  platform: 'win32' as const,
  env: { Path: 'C:\\Windows\\System32;C:\\Program Files\\nodejs', PATHEXT: '.COM;.EXE;.BAT;.CMD', COMSPEC: ENV.ComSpec },
  cwd: 'C:\\work',
  isFile: (path: string) => FILES.has(path.toLowerCase()),
};

describe('Windows command line for cmd shims', () => {
  it('ResolveCommand_CmdShim_UsesComSpecWithQuotedArguments: every hostile argument reaches the program unchanged', () => {
    const resolved = resolveStdioCommand('npx', HOSTILE, context);
    expect(resolved.file).toBe(ENV.ComSpec);
    expect(resolved.verbatim).toBe(true);
    expect(resolved.args.slice(0, 3)).toEqual(['/d', '/s', '/c']);
    const { batch, argv } = decodeCmdShim(resolved.file, resolved.args);
    expect(batch).toBe('C:\\Program Files\\nodejs\\npx.cmd');
    expect(argv).toEqual([NODE_EXE, NPX_CLI, ...HOSTILE]);
  });

  it.each(HOSTILE.map((arg) => [JSON.stringify(arg), arg]))('round-trips %s on its own', (_, arg) => {
    const line = buildCmdShimLine('C:\\nodejs\\npx.cmd', [arg as string]);
    expect(decodeCmdShim('cmd.exe', ['/d', '/s', '/c', `"${line}"`]).argv.slice(2)).toEqual([arg]);
  });

  it('quotes a batch path holding spaces, parentheses, carets, ampersands and percents', () => {
    for (const batch of ['C:\\Program Files (x86)\\nodejs\\npx.cmd', 'C:\\100% & more^\\npx.cmd', 'C:\\%PATH%\\x.bat']) {
      const line = buildCmdShimLine(batch, ['a b']);
      expect(decodeCmdShim('cmd.exe', ['/d', '/s', '/c', `"${line}"`])).toEqual({ batch, argv: [NODE_EXE, NPX_CLI, 'a b'] });
    }
  });

  it('the reference model catches the mistakes it exists to catch', () => {
    // CommandLineToArgvW quoting alone: the quote inside the argument ends cmd.exe's quoting.
    const naive = `"C:\\nodejs\\npx.cmd" ${quoteWindowsArgument('a"&calc')}`;
    expect(() => decodeCmdShim('cmd.exe', ['/d', '/s', '/c', `"${naive}"`])).toThrow(Injection);
    // Caret-escaping `%` (cross-spawn's way) does not stop a defined variable from expanding,
    // and the expanded PATH brings its bare "(x86)" along.
    const caretPercent = `"C:\\nodejs\\npx.cmd" ${quoteWindowsArgument('%PATH:a=b%').replace(/[()%!^"<>&|;, ]/g, '^$&').replace(/[()%!^"<>&|;, ]/g, '^$&')}`;
    expect(() => decodeCmdShim('cmd.exe', ['/d', '/s', '/c', `"${caretPercent}"`])).toThrow(Injection);
    const caretUser = `"C:\\nodejs\\npx.cmd" ${quoteWindowsArgument('%USERNAME:x=y%').replace(/[()%!^"<>&|;, ]/g, '^$&').replace(/[()%!^"<>&|;, ]/g, '^$&')}`;
    expect(decodeCmdShim('cmd.exe', ['/d', '/s', '/c', `"${caretUser}"`]).argv.slice(2)).toEqual(['victim']);
    // Escaping once: the shim's second pass sees the quotes bare, and `\"` means nothing to cmd.exe.
    const once = `"C:\\nodejs\\npx.cmd" ${quoteWindowsArgument('a"&calc').replace(/[&"^]/g, '^$&')}`;
    expect(() => decodeCmdShim('cmd.exe', ['/d', '/s', '/c', `"${once}"`])).toThrow(Injection);
  });

  it('quotes for CommandLineToArgvW: backslashes doubled only before quotes', () => {
    expect(quoteWindowsArgument('')).toBe('""');
    expect(quoteWindowsArgument('C:\\dir name\\')).toBe('"C:\\dir name\\\\"');
    expect(quoteWindowsArgument('a\\b')).toBe('"a\\b"');
    expect(quoteWindowsArgument('a\\"b')).toBe('"a\\\\\\"b"');
    for (const arg of HOSTILE) expect(commandLineToArgv(`x ${quoteWindowsArgument(arg)}`)).toEqual(['x', arg]);
  });

  it('refuses line breaks and NULs, which cmd.exe cannot carry', () => {
    for (const arg of ['a\nb', 'a\rb', 'a\0b']) {
      const error = (() => {
        try {
          buildCmdShimLine('C:\\nodejs\\npx.cmd', [arg]);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(LocalError);
      expect((error as LocalError).code).toBe('unsafe-argument');
    }
  });
});
