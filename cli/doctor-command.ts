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
  const dir = values['config-dir'];
  if (values.launch === true && dir === undefined) throw new LocalError('usage', '--launch needs --config-dir DIR: it starts the servers of that workstation config dir as its sidecar would');
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
