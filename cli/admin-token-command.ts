/**
 * `switchyard admin-token --config FILE`: makes a fresh admin token, writes its sha-256 into the
 * worker config as `admin-token-sha256` and prints the token once. The token sees the full
 * `/healthz` and status page, and signs in on the OAuth consent page to approve an app for any
 * agent. A config that had one gets a new one: the old token stops working, and so do the OAuth
 * grants it approved (the worker checks each grant's approver against the config).
 *
 * @module
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { sha256Hex } from '../shared/credentials.ts';
import { LocalError } from '../shared/errors.ts';
import { newToken } from './state-dir.ts';
import { openWorkerConfig, saveWorkerConfig, whenTheWorkerHasIt } from './worker-config-file.ts';

export async function runAdminTokenCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { config: { type: 'string' } } });
  if (values.config === undefined) throw new LocalError('usage', 'admin-token needs --config FILE: the worker config to write the token\'s sha-256 into');
  const file = openWorkerConfig(resolve(values.config));
  const replaced = typeof file.raw['admin-token-sha256'] === 'string';
  const token = newToken();
  saveWorkerConfig(file, { ...file.raw, 'admin-token-sha256': await sha256Hex(token) });
  process.stdout.write(
    [
      `${file.created ? 'Created' : 'Updated'} ${file.path}: ${replaced ? '~' : '+'} admin-token-sha256${replaced ? ' (the admin token it replaces no longer works, nor do the OAuth grants that token approved)' : ''}`,
      whenTheWorkerHasIt(file.runtime),
      '',
      'The admin token, shown this once (the worker config keeps only its sha-256; lost, run admin-token again):',
      '',
      `  ${token}`,
      '',
      'It sees every host, server, session and call on /healthz and the status page (/), and on the OAuth consent page approves an app for any agent.',
      '',
    ].join('\n'),
  );
  return 0;
}
