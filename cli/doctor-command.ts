import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { doctorPassed, formatDoctor, runDoctor } from './doctor.ts';
import { runWorkstationDoctor } from './doctor-workstation.ts';
import { FULL_CLI, type Program } from './program.ts';
import { LocalError } from '../shared/errors.ts';

/**
 * `switchyard doctor`: prints every check with its fix; exit 1 when one fails.
 *
 * Without `--config-dir` (the full CLI) it is the worker's machine's: bubblewrap and the other
 * sandbox tools are information there, not failures, since that machine launches no server.
 * With `--config-dir DIR` it is a workstation's doctor: no Deno (a sidecar runs no worker), and
 * deep checks of DIR (`doctor-workstation.ts`: sidecar.json, the host key, the real link
 * handshake, trust profiles, server commands). `--worker URL` beside it wins over sidecar.json's
 * "worker", as it does for `switchyard sidecar`, for the `/healthz` request and the link alike.
 * `--launch` beside it starts each server as the sidecar would (`doctor-launch.ts`); it starts
 * processes, so it is asked for, never the default.
 *
 * @param options `deno: false` on a workstation, which runs no worker; `program`, the one running, for its hints.
 */
export async function runDoctorCommand(argv: string[], options: { deno?: boolean; program?: Program } = {}): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'config-dir': { type: 'string' }, worker: { type: 'string' }, launch: { type: 'boolean' } } });
  // As the sidecar's own commands take it (configDirFrom): a doctor that ignored it ran the
  // worker machine's checks on a workstation, saying nothing of its config (review s23).
  const dir = values['config-dir'] ?? (process.env.SWITCHYARD_CONFIG_DIR || undefined);
  if (values.launch === true && dir === undefined) throw new LocalError('usage', '--launch needs --config-dir DIR: it starts the servers of that workstation config dir as its sidecar would');
  const asWhom = values.launch === true ? sudoLaunchRefusal(process.getuid?.(), process.env) : null;
  if (asWhom !== null) throw new LocalError('usage', asWhom);
  // The full CLI without a config dir runs on the worker's machine, which launches no server (unless
  // under worker --runtime node) and needs no sandbox tools; the workstation's sidecar.js always launches them.
  const workersMachine = dir === undefined && options.deno !== false;
  const system = await runDoctor({ deno: workersMachine, sandbox: workersMachine ? 'informational' : 'required', ...(values.worker === undefined ? {} : { worker: values.worker }) });
  const workstation = dir === undefined
    ? []
    : await runWorkstationDoctor(resolve(dir), { program: options.program ?? FULL_CLI, ...(values.worker === undefined ? {} : { worker: values.worker }), ...(values.launch === true ? { launch: true } : {}) });
  const checks = [...system, ...workstation];
  process.stdout.write(formatDoctor(checks) + '\n');
  return doctorPassed(checks) ? 0 : 1;
}

/**
 * Why `doctor --launch` will not start servers, or null: under sudo it would start them as root,
 * not as the user whose sidecar runs them, so a server that works only as root would pass, and one
 * that writes files (server-memory's store, a filesystem server's edits) would leave them owned by
 * root, where that sidecar can no longer write them. A root sidecar's owner runs it as root
 * without sudo (a root shell, or `sudo -u root` sets SUDO_UID to 0).
 */
export function sudoLaunchRefusal(uid: number | undefined, env: Record<string, string | undefined>): string | null {
  const sudoUid = env.SUDO_UID;
  if (uid !== 0 || sudoUid === undefined || sudoUid === '' || sudoUid === '0') return null;
  const user = env.SUDO_USER !== undefined && env.SUDO_USER !== '' ? env.SUDO_USER : `uid ${sudoUid}`;
  return `--launch would start servers as root, under sudo, where the sidecar runs them as ${user}: run doctor --launch as that user, without sudo`;
}
