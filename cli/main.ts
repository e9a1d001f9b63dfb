#!/usr/bin/env node
/**
 * The `switchyard` command. Each subcommand lives in its own file; this one only dispatches and
 * prints help. Errors print one line (`switchyard: …`) and exit 1; stack traces only with
 * SWITCHYARD_DEBUG=1.
 *
 * @module
 */
import { LocalError, WireError } from '../shared/errors.ts';
import { ValidationError, formatIssue } from '../shared/validation.ts';

const HELP: Record<string, string> = {
  main: `Usage: switchyard <command> [options]

Commands:
  start                         Run the embedded default: worker under Deno, a sidecar, demo servers
  worker --config FILE          Run the edge worker (under Deno) with a worker config
  sidecar --config-dir DIR      Run a sidecar that links this workstation to its worker
  sidecar profiles --config-dir DIR
                                Print each trust profile with its current revision
  check FILE                    Validate a worker config, sidecar.json, mcp.json or trust profile
  doctor [--config-dir DIR] [--worker URL]
                                Check bubblewrap, user namespaces, Deno and the worker

Run "switchyard <command> --help" for a command's options.`,
  start: `Usage: switchyard start [--host H] [--port N] [--state-dir DIR]

Starts the worker under Deno (default http://127.0.0.1:8787), one sidecar on this machine linked
over reverse HTTP, and demo MCP servers from npm. Prints the agent URL, a token (kept across
restarts in the state dir) and client config, written to <state-dir>/client-config.json.
HOST and PORT environment variables override the address. Ctrl-C stops everything.

Options:
  --host H          Address to listen on (default 127.0.0.1, or $HOST)
  --port N          Port (default 8787, or $PORT)
  --state-dir DIR   Where tokens, generated configs and the demo folder live (default .switchyard)`,
  worker: `Usage: switchyard worker --config FILE [--host H] [--port N] [--runtime deno|node]

Runs the edge worker. Under Deno by default (the binary from the "deno" npm package).

Options:
  --config FILE     Worker config (see README: "Worker config")
  --host H          Address to listen on (default 127.0.0.1)
  --port N          Port (default 8787)
  --runtime R       deno (default) or node`,
  sidecar: `Usage: switchyard sidecar --config-dir DIR [--worker URL] [--entity-id ID] [--secret-file FILE]
       switchyard sidecar profiles --config-dir DIR

Links this workstation to its worker and hosts the MCP servers configured in DIR.
Flags override the values in DIR/sidecar.json.

Options:
  --config-dir DIR  Sidecar config dir (sidecar.json, mcp-servers/, trust-profiles/, …)
  --worker URL      Worker base URL
  --entity-id ID    This host's entity id
  --secret-file F   File holding the host secret`,
  profiles: `Usage: switchyard sidecar profiles --config-dir DIR

Prints each trust profile in DIR/trust-profiles with its current revision, the value to put in
the worker config's "trust-profile-revision".`,
  check: `Usage: switchyard check FILE

Validates a worker config, a sidecar.json, an mcp.json or a trust profile (recognised by its
content and place) and prints every problem as "path: message". Exit 1 when there is any.`,
  doctor: `Usage: switchyard doctor [--config-dir DIR] [--worker URL]

Checks that bubblewrap is present and usable, user namespaces are enabled, Deno is installed and
(with --worker or --config-dir) that the worker answers. Exit 1 when a check fails.`,
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  switch (command) {
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(HELP.main + '\n');
      return command === undefined ? 1 : 0;
    case 'start': {
      if (wantsHelp) return help('start');
      const { runStart } = await import('./start.ts');
      return runStart(rest);
    }
    case 'worker': {
      if (wantsHelp) return help('worker');
      const { runWorkerCommand } = await import('./worker-command.ts');
      return runWorkerCommand(rest);
    }
    case 'sidecar': {
      if (rest[0] === 'profiles') {
        if (wantsHelp) return help('profiles');
        const { runProfilesCommand } = await import('./sidecar-command.ts');
        return runProfilesCommand(rest.slice(1));
      }
      if (wantsHelp) return help('sidecar');
      const { runSidecarCommand } = await import('./sidecar-command.ts');
      return runSidecarCommand(rest);
    }
    case 'check': {
      if (wantsHelp) return help('check');
      const { runCheck } = await import('./check.ts');
      return runCheck(rest);
    }
    case 'doctor': {
      if (wantsHelp) return help('doctor');
      const { runDoctorCommand } = await import('./doctor-command.ts');
      return runDoctorCommand(rest);
    }
    default:
      process.stderr.write(`switchyard: unknown command "${command}"\n\n${HELP.main}\n`);
      return 1;
  }
}

function help(name: string): number {
  process.stdout.write(HELP[name] + '\n');
  return 0;
}

/** One line per problem; the stack only when asked for. */
export function describeError(error: unknown): string {
  if (error instanceof ValidationError) return error.issues.map(formatIssue).join('\n');
  if (error instanceof WireError) return `${error.message} (${error.reason})`;
  if (error instanceof LocalError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

const invokedDirectly = process.argv[1] !== undefined && /(?:cli[/\\]main\.ts|sidecar\.js)$/.test(process.argv[1]);
if (invokedDirectly) {
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
