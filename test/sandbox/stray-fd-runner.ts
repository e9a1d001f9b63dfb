/**
 * Run by `stray-fd.test.ts` as `node --import tsx test/sandbox/stray-fd-runner.ts`, with stray
 * descriptors its parent left open (as a shell's pipe would be). It launches `sleep` through the
 * real ProcessExecutor uncontained, contained without network and contained with
 * `internet-client`, and prints, for each, the descriptors the server process holds and those of
 * the sandbox tool (bwrap), as read from `/proc/PID/fd` while it runs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { inheritableDescriptors } from '../../sidecar/process/inherited-fds.ts';
import { bubblewrapProbe, compileContainment } from '../../sidecar/sandbox/index.ts';
import { NEUTRAL_PROFILE, type NetworkCapability } from '../../sidecar/trust/effective-profile.ts';

const SLEEP = '/usr/bin/sleep';

function fdsOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/fd`).map(Number).sort((a, b) => a - b);
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The `sleep` below `pid` (itself, or its descendant inside the sandbox). */
function serverPid(pid: number): number | undefined {
  if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep') return pid;
  for (const child of childrenOf(pid)) {
    const found = serverPid(child);
    if (found !== undefined) return found;
  }
  return undefined;
}

async function main(): Promise<void> {
  const strayBefore = inheritableDescriptors();
  const executor = new ProcessExecutor({ termGraceMs: 200 });
  const dir = mkdtempSync(join(tmpdir(), 'sy-stray-fd-'));
  const results: Record<string, unknown> = { strayBefore };
  const launches: [string, NetworkCapability[] | null][] = [['uncontained', null], ['contained', []], ['internet-client', ['internet-client']]];
  for (const [name, network] of launches) {
    const policy =
      network === null
        ? null
        : await compileContainment(
            { ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: dir, targetPath: dir, accessMode: 'read-write' }], networkCapabilities: network },
            { file: SLEEP, args: ['30'] },
            { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') },
          );
    const handle = await executor.launch({ command: SLEEP, args: ['30'], env: {}, policy });
    let server: number | undefined;
    for (let i = 0; i < 400 && server === undefined; i++) {
      server = serverPid(handle.pid);
      if (server === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // `comm` reads "sleep" from early in exec, before the kernel closes close-on-exec descriptors
    // (bwrap's own), so a read at that instant can show one that is about to go. Poll until only
    // 0-2 remain, within a bound: a descriptor that really leaked never goes, and is reported.
    let serverFds = server === undefined ? null : fdsOf(server);
    for (let i = 0; i < 200 && server !== undefined && serverFds!.some((fd) => fd > 2); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      serverFds = fdsOf(server);
    }
    results[name] = { server: serverFds, tool: policy === null ? null : fdsOf(handle.pid) };
    await handle.dispose(0);
  }
  await executor.disposeAll();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(results) + '\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
