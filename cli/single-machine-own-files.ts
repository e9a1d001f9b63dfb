/**
 * What of `switchyard worker --runtime node`'s own its contained servers must never see, beside
 * its config dir: the worker config (a server that could write it could add an agent), the
 * built-in OAuth server's state dir and the audit file. The start hands them to the local host's
 * compiler; `check` predicts its refusals from the same list.
 *
 * @module
 */
import { dirname, resolve } from 'node:path';
import type { OwnFile } from '../sidecar/sandbox/config-dir-exposure.ts';

/**
 * @param configFile The worker config's path.
 * @param options `stateDir` (`--state-dir`; the config's folder by default), `auditFile` (the
 *   config's `audit.file`, relative to the config's folder).
 */
export function singleMachineOwnFiles(configFile: string, options: { stateDir?: string; auditFile?: string } = {}): OwnFile[] {
  const file = resolve(configFile);
  return [
    { path: file, key: '--config' },
    { path: resolve(options.stateDir ?? dirname(file)), key: '--state-dir' },
    ...(options.auditFile !== undefined ? [{ path: resolve(dirname(file), options.auditFile), key: 'audit.file' as const }] : []),
  ];
}
