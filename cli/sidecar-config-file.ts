/**
 * `sidecar.json` as the CLI's commands read it (`switchyard sidecar`, the workstation's doctor):
 * the sidecar's own loader, its refusal worded as `switchyard check` words the file, down to the
 * line and column of a syntax error (`config-file-read.ts`).
 *
 * @module
 */
import { join } from 'node:path';
import { ConfigFileError } from '../sidecar/config/config-file-problems.ts';
import { loadSidecarConfig, type SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { locateSyntaxErrorInFile } from './config-file-read.ts';

/** {@link loadSidecarConfig}; a file it refuses is reported as `check` reports it. */
export function readSidecarConfig(dir: string, overrides: { worker?: string; entityId?: string } = {}): SidecarConfig {
  try {
    return loadSidecarConfig(dir, overrides);
  } catch (error) {
    if (!(error instanceof ConfigFileError) || error.file !== join(dir, 'sidecar.json')) throw error;
    throw new ConfigFileError(error.file, error.kind, locateSyntaxErrorInFile(error.file, error.issues));
  }
}
