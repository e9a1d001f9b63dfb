/**
 * How a `switchyard` command ends on an error: one line (`switchyard: …`), exit 1; the stack only
 * with SWITCHYARD_DEBUG=1. Shared by both entries (`main.ts`, `sidecar-main.ts`) and the bin.
 *
 * @module
 */
import { LocalError, WireError } from '../shared/errors.ts';
import { ValidationError, formatIssue } from '../shared/validation.ts';

/** One line per problem; the stack only when asked for. */
export function describeError(error: unknown): string {
  if (error instanceof ValidationError) return error.issues.map(formatIssue).join('\n');
  if (error instanceof WireError) return `${error.message} (${error.reason})`;
  if (error instanceof LocalError) return error.message;
  const usage = parseArgsProblem(error);
  if (usage !== undefined) return usage;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Node's `parseArgs` errors in the CLI's words (sentence case, the detail after a colon, no final
 * period, and where to look); its own read `Unexpected argument 'x'. This command does not…`.
 */
function parseArgsProblem(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) return undefined;
  const quoted = /'([^']*)'/.exec((error as Error).message)?.[1] ?? '';
  const help = 'see switchyard --help';
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `Unexpected argument "${quoted}": this command takes options only (${help})`;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `Unknown option "${quoted}" (${help})`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    // `-p, --port <value>` names the option both ways: the long name is the one to show.
    const option = quoted.replace(/ <value>$/, '').replace(/^-\w, /, '');
    if (/does not take an argument/.test((error as Error).message)) return `Option ${option} takes no value: give it alone (${help})`;
    return `Missing value: ${option} needs one (${help})`;
  }
  return undefined;
}

/** Runs an entry's `main` as this process: its result is the exit code, an error one line on stderr. */
export function runAsProcess(main: (argv: string[]) => Promise<number>): void {
  // A reader that left (`check … | head`) is no error of the command's: its output goes nowhere, and
  // it ends as it would have, where the unhandled EPIPE printed Node's stack (review s22). A long
  // command (worker, sidecar) keeps running and cleans up as ever.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  main(process.argv.slice(2)).then(
    (code) => {
      if (code !== 0) process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`switchyard: ${describeError(error)}\n`);
      if (process.env.SWITCHYARD_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
      process.exitCode = 1;
    },
  );
}
