/**
 * `switchyard check FILE|DIR …`: validates any Switchyard config file and prints every problem as
 * `path: message`. The kind of file is recognised by its content and, for trust profiles, by its
 * folder, so one command serves all four. A sidecar config dir is checked whole: every file in it
 * (`check-config-dir.ts`), and the trust profiles its files name must exist and resolve. A worker
 * config given with a host's dir is checked against it (`check-across.ts`).
 *
 * A worker config is validated exactly as the runtime it will run on validates it, by the same
 * function (`parseWorkerConfigText`) that `switchyard worker` and the deployed bundle call:
 * `--runtime edge` (the default: `dist/worker.js`, Deno), `--runtime node` (the single-machine
 * mode, which also serves top-level `{"type":"local"}` servers) or `--runtime cloudflare` (the
 * Workers bundle: the edge's checks, its own refusals, and the size a secret holds).
 *
 * @module
 */
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { formatIssue } from '../shared/validation.ts';
import type { WorkerConfig } from '../worker/config/worker-config.ts';
import { LocalError } from '../shared/errors.ts';
import { readJsonFile } from '../sidecar/config/config-file-problems.ts';
import { describeFileProblems } from '../shared/file-problems-report.ts';
import { checkAcross } from './check-across.ts';
import { checkConfigDir } from './check-config-dir.ts';
import { withOverrides } from './sidecar-reload.ts';
import { type CheckResult, checkFile, type CheckRuntime, parseCheckedWorkerConfig } from './check-file.ts';

export { type CheckResult, checkFile, type CheckRuntime, type ConfigKind, configDirOfMcpFile, kindOf } from './check-file.ts';

/** `--runtime` as check names it; `deno` is an edge runtime, the default of `switchyard worker`. */
export function checkRuntime(value: string | undefined): CheckRuntime {
  if (value === undefined || value === 'edge' || value === 'deno') return 'edge';
  if (value === 'node' || value === 'cloudflare') return value;
  throw new LocalError('usage', `Unknown runtime "${value}": expected edge (the default, also for deno), node or cloudflare`);
}

export async function runCheck(argv: string[]): Promise<number> {
  const { values, positionals: files } = parseArgs({
    args: argv,
    options: { runtime: { type: 'string' }, worker: { type: 'string' }, 'entity-id': { type: 'string' } },
    allowPositionals: true,
  });
  const runtime = checkRuntime(values.runtime);
  // A dir checked as the sidecar that runs it with these flags reads it (they win over sidecar.json).
  const overrides = {
    ...(values.worker !== undefined ? { worker: values.worker } : {}),
    ...(values['entity-id'] !== undefined ? { entityId: values['entity-id'] } : {}),
  };
  if (files.length === 0) {
    process.stderr.write('switchyard check: name a file or a sidecar config dir to check, e.g. switchyard check worker.json\n');
    return 1;
  }
  let failed = false;
  const workers: Array<{ file: string; config: WorkerConfig }> = [];
  const dirs: string[] = [];
  for (const target of files) {
    const directory = isDirectory(target);
    const results = directory
      ? (await checkConfigDir(target, { singleMachine: runtime === 'node' })).map((result) => withOverrides(result, target, overrides))
      : [{ file: target, ...checkFile(target, runtime) }];
    for (const result of results) {
      process.stdout.write(`${formatResult(result)}\n`);
      if (result.issues.length > 0) failed = true;
    }
    if (directory) dirs.push(target);
    else if (results[0]?.kind === 'worker config' && results[0].issues.length === 0) {
      const read = readJsonFile(target);
      if (read.ok) workers.push({ file: target, config: parseCheckedWorkerConfig(read.text, runtime) });
    }
  }
  // A worker config and a host's dir given together are checked against each other. Without a
  // DIR, `worker --runtime node` reads its local servers from the config's own folder: that
  // folder is checked as it will be read.
  const pairs = workers.flatMap(({ file, config }) => dirs.map((dir) => ({ file, config, dir })));
  if (runtime === 'node' && dirs.length === 0) {
    for (const { file, config } of workers) {
      if (!Object.values(config.servers).some((server) => server.executor.type === 'local')) continue;
      const dir = dirname(resolve(file));
      process.stdout.write(`${file}: its local servers are read from ${dir}, as switchyard worker --runtime node reads them without --config-dir (name another dir after the file to check that one)\n`);
      for (const result of await checkConfigDir(dir, { singleMachine: true })) {
        process.stdout.write(`${formatResult(result)}\n`);
        if (result.issues.length > 0) failed = true;
      }
      pairs.push({ file, config, dir });
    }
  }
  for (const { file, config, dir } of pairs) {
    const across = await checkAcross(config, dir, runtime, overrides, file);
    // Not "ok": a sidecar.json that cannot be read leaves nothing checked across (review s22).
    if (!across.checked) {
      process.stdout.write(`${file} × ${dir}: not checked across files (${join(dir, 'sidecar.json')} has problems, above)\n`);
      continue;
    }
    if (across.worker.length + across.sidecar.length === 0) {
      process.stdout.write(`${file} × ${dir}: ok (across files)\n`);
      continue;
    }
    failed = true;
    if (across.worker.length > 0) process.stdout.write(`${describeFileProblems(file, `across files, with ${dir}`, across.worker)}\n`);
    if (across.sidecar.length > 0) process.stdout.write(`${describeFileProblems(join(dir, 'sidecar.json'), `across files, with ${file}`, across.sidecar)}\n`);
  }
  return failed ? 1 : 0;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** `FILE: ok (kind)` with its warnings, or the problem report a failing command prints too. */
export function formatResult({ file, kind, issues, warnings, unreadable }: CheckResult & { file: string }): string {
  if (unreadable !== undefined) return `${file}: ${unreadable}`;
  if (issues.length > 0) return describeFileProblems(file, kind, issues);
  const warned = warnings.length === 0 ? '' : `, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
  return [`${file}: ok (${kind}${warned})`, ...warnings.map((w) => `  warning: ${formatIssue(w)}`)].join('\n');
}
