import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatDoctor, runDoctor } from './doctor.ts';

/**
 * `switchyard doctor`: prints every check with its fix; exit 1 when one fails.
 *
 * @param options `deno: false` on a workstation, which runs no worker.
 */
export async function runDoctorCommand(argv: string[], options: { deno?: boolean } = {}): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'config-dir': { type: 'string' }, worker: { type: 'string' } } });
  let worker = values.worker;
  if (worker === undefined && values['config-dir'] !== undefined) {
    try {
      worker = (JSON.parse(readFileSync(join(values['config-dir'], 'sidecar.json'), 'utf8')) as { worker?: string }).worker;
    } catch {
      // doctor reports what it can; a broken sidecar.json is `switchyard check`'s job
    }
  }
  const checks = await runDoctor({ ...options, ...(worker === undefined ? {} : { worker }) });
  process.stdout.write(formatDoctor(checks) + '\n');
  return checks.every((c) => c.ok) ? 0 : 1;
}
