/**
 * Run by `sandbox-hardening.test.ts`, as this suite's user or (under `setpriv`) as a user other
 * than root: compiles a containment for `file args` with the real compiler (no grants; the network
 * named) and launches it through the real executor. Prints, as JSON, its uid and how the launch
 * exited, what it printed and what the sidecar logged at warn.
 */
import { createLogger } from '../../sidecar/log.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe, compileContainment } from '../../sidecar/sandbox/index.ts';
import { NEUTRAL_PROFILE, type NetworkCapability } from '../../sidecar/trust/effective-profile.ts';

interface Spec {
  readonly file: string;
  readonly args: string[];
  readonly network?: NetworkCapability[];
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as Spec;
  const warnings: unknown[] = [];
  const executor = new ProcessExecutor({ termGraceMs: 200, logger: createLogger({ level: 'warn', write: (line) => warnings.push(JSON.parse(line)) }) });
  try {
    const policy = await compileContainment({ ...NEUTRAL_PROFILE, networkCapabilities: spec.network ?? [] }, { file: spec.file, args: spec.args }, {
      revision: 'sha256:test',
      platform: 'linux',
      probe: bubblewrapProbe('/usr/bin/bwrap'),
    });
    const handle = await executor.launch({ command: spec.file, args: spec.args, env: {}, policy });
    let stdout = '';
    let stderr = '';
    handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    handle.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Its exit can come before the last of its output: all three, before reading what it printed.
    const [exited] = await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve)), new Promise((resolve) => handle.stderr.once('end', resolve))]);
    process.stdout.write(JSON.stringify({ uid: process.getuid?.(), exited, stdout, stderr, warnings }) + '\n');
  } finally {
    await executor.disposeAll();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
