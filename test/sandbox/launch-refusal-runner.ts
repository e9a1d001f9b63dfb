/**
 * Run by `launch-refusal.test.ts` as `node --import tsx test/sandbox/launch-refusal-runner.ts`, in
 * a process its test set up to be unable to launch safely: without a readable `/proc/self/fd`,
 * or holding a descriptor without close-on-exec at the top of its open-files limit; with
 * `--out-of-descriptors` it fills its own table first, so the spawn itself runs out (and probes
 * once then, once after). It launches
 * `/usr/bin/true` through the real ProcessExecutor, uncontained, and runs the real bubblewrap
 * probe, and prints what happened to each as JSON.
 */
import { closeSync, openSync } from 'node:fs';
import type { WireError } from '../../shared/errors.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe } from '../../sidecar/sandbox/index.ts';

/** Opens `/dev/null` until the table is full, then closes `free` of them again; returns a function that closes the rest. */
function fillDescriptors(free: number): () => void {
  const held: number[] = [];
  try {
    for (;;) held.push(openSync('/dev/null', 'r'));
  } catch {
    // EMFILE: full
  }
  for (const fd of held.splice(-free)) closeSync(fd);
  return () => held.forEach((fd) => closeSync(fd));
}

async function main(): Promise<void> {
  const executor = new ProcessExecutor({ termGraceMs: 200 });
  // Room to list the descriptors and to make one pipe, not the next: the spawn runs out (EMFILE).
  const full = process.argv.includes('--out-of-descriptors');
  const release = full ? fillDescriptors(2) : () => {};
  let launch: Record<string, unknown>;
  try {
    const handle = await executor.launch({ command: '/usr/bin/true', args: [], env: {}, policy: null });
    launch = { started: true, exit: await handle.exited };
  } catch (error) {
    const wire = error as WireError;
    launch = { started: false, reason: wire.reason, message: wire.message, detail: wire.detail, cause: (wire.cause as { code?: string } | undefined)?.code ?? null };
  }
  const spawned = executor.spawnCount;
  // Out of descriptors, the probe cannot run bwrap at all: that verdict must not outlive the moment.
  const probeWhileFull = full ? await bubblewrapProbe('/usr/bin/bwrap')() : null;
  release();
  await executor.disposeAll();
  const probe = await bubblewrapProbe('/usr/bin/bwrap')();
  process.stdout.write(JSON.stringify({ launch, spawned, probe, probeWhileFull }) + '\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
