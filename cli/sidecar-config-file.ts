/**
 * `sidecar.json` as the CLI's commands read it (`switchyard sidecar`, the workstation's doctor):
 *
 * - a file that cannot be read is reported as only that, in plain words (`not found`, `not a
 *   file`, `not readable`), and a missing one with the `sidecar init` line that writes it; the
 *   sidecar's own loader would add a problem for every key the absent file lacks;
 * - a file it refuses is worded as `switchyard check` words it, down to the line and column of
 *   a syntax error (`config-file-read.ts`).
 *
 * @module
 */
import { join } from 'node:path';
import { LocalError } from '../shared/errors.ts';
import { ConfigFileError } from '../sidecar/config/config-file-problems.ts';
import { loadSidecarConfig, type SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { locateSyntaxErrorInFile, unreadable } from './config-file-read.ts';
import type { FileReadProblem } from '../shared/file-read-problem.ts';
import { FULL_CLI, shellWord, type Program } from './program.ts';

export type SidecarOverrides = { worker?: string; entityId?: string };

/** The command that sets up a workstation in `dir`, as the README gives it, for the program running. */
export function initCommand(dir: string, program: Program = FULL_CLI): string {
  return `${program.run} sidecar init --config-dir ${shellWord(dir)} --worker URL --entity-id ID`;
}

/**
 * Why `dir`'s sidecar.json cannot be read when it is needed, or `undefined`. It is not needed
 * when `--worker` and `--entity-id` are both given: the sidecar runs on those alone.
 */
export function unreadableSidecarConfig(dir: string, overrides: SidecarOverrides = {}): FileReadProblem | undefined {
  const why = unreadable(join(dir, 'sidecar.json'));
  return why === 'not found' && overrides.worker !== undefined && overrides.entityId !== undefined ? undefined : why;
}

/** {@link loadSidecarConfig}, its refusals worded as the module comment says. */
export function readSidecarConfig(dir: string, overrides: SidecarOverrides = {}, program: Program = FULL_CLI): SidecarConfig {
  const file = join(dir, 'sidecar.json');
  const why = unreadableSidecarConfig(dir, overrides);
  if (why !== undefined) throw new LocalError('invalid-config', `${file}: ${why}${why === 'not found' ? `: set up this workstation with ${initCommand(dir, program)}` : ''}`);
  try {
    return loadSidecarConfig(dir, overrides);
  } catch (error) {
    if (!(error instanceof ConfigFileError) || error.file !== file) throw error;
    throw new ConfigFileError(error.file, error.kind, locateSyntaxErrorInFile(error.file, error.issues));
  }
}
