/**
 * `switchyard worker --config FILE`: the edge worker, under Deno by default (what production
 * edge hosts run), or under Node with `--runtime node`.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalError } from '../shared/errors.ts';
import { parseWorkerConfigText } from '../worker/config/worker-config.ts';
import { startDenoWorker } from './deno-worker-process.ts';
import { stopOnSignals } from './sidecar-command.ts';

export async function runWorkerCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string' }, host: { type: 'string' }, port: { type: 'string' }, runtime: { type: 'string' } },
  });
  if (values.config === undefined) throw new LocalError('usage', 'Missing --config FILE: the worker config (see switchyard worker --help)');
  const configFile = resolve(values.config);
  const host = values.host ?? process.env.HOST ?? '127.0.0.1';
  const port = Number(values.port ?? process.env.PORT ?? '8787');
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new LocalError('usage', `Invalid port "${values.port}": expected 0-65535`);
  const runtime = values.runtime ?? 'deno';
  // Validate here first so every problem is printed as path: message before anything starts.
  parseWorkerConfigText(readFileSync(configFile, 'utf8'), { runtime: 'edge' });

  if (runtime === 'node') {
    const { startNodeWorker } = await import('../worker/adapters/node/node-worker.ts');
    const worker = await startNodeWorker({ config: JSON.parse(readFileSync(configFile, 'utf8')), host, port });
    process.stdout.write(JSON.stringify({ event: 'listening', url: worker.url }) + '\n');
    stopOnSignals(() => worker.close());
  } else if (runtime === 'deno') {
    const worker = await startDenoWorker({ configFile, host, port });
    process.stdout.write(JSON.stringify({ event: 'listening', url: worker.url }) + '\n');
    stopOnSignals(async () => {
      await worker.stop();
    });
    const code = await worker.exited;
    return code;
  } else {
    throw new LocalError('usage', `Unknown runtime "${runtime}": expected deno or node`);
  }
  await new Promise<never>(() => {});
  return 0;
}
