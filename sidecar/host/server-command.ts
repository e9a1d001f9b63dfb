/**
 * Turns a configured stdio server (`{command, args, cwd}`) into the file the executor starts,
 * with this host's platform, PATH and file system, through the process layer's
 * StdioCommandResolver. What it adds: the host facts, and a failure that names the server but not
 * its command line (argv never crosses the link; the detail goes to the sidecar log).
 *
 * @module
 */
import { statSync } from 'node:fs';
import { LocalError, WireError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import { resolveStdioCommand } from '../process/stdio-command-resolver.ts';
import type { StdioServerConfig } from './server-config.ts';

export interface CommandResolution {
  /** The file to start (absolute on POSIX; ComSpec for a Windows `.cmd` shim). */
  command: string;
  args: string[];
  /** Windows `cmd.exe /d /s /c` launches pass one pre-quoted line. */
  verbatim?: boolean;
}

export interface HostFacts {
  env: Readonly<Record<string, string | undefined>>;
  platform?: NodeJS.Platform;
  log: Logger;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Resolves the command of server `name`; a missing command is `launch-failed`, before any launch. */
export function resolveServerCommand(name: string, config: StdioServerConfig, host: HostFacts): CommandResolution {
  try {
    const resolved = resolveStdioCommand(config.command, config.args, {
      platform: host.platform ?? process.platform,
      env: host.env,
      cwd: config.cwd ?? process.cwd(),
      isFile,
    });
    return { command: resolved.file, args: [...resolved.args], ...(resolved.verbatim ? { verbatim: true } : {}) };
  } catch (error) {
    if (!(error instanceof LocalError)) throw error;
    host.log.error('Server command not found', { error });
    throw new WireError('launch-failed', `Server "${name}" cannot start: its command was not found on this host, see the sidecar log`, {
      detail: { server: name },
    });
  }
}
