/**
 * Run by `stray-fd.test.ts` as `node --perf-basic-prof … --import tsx test/sandbox/stray-fd-runner.ts`,
 * with stray descriptors its parent left open (as a shell's pipe would be) and V8's own perf map
 * open without close-on-exec. It launches `sleep` through the real ProcessExecutor uncontained,
 * contained without network and contained with `internet-client`, and prints, for each, what
 * the server process holds, and what the sandbox tool (bwrap) and its network helper
 * (slirp4netns) hold, as read from `/proc/PID/fd` while it runs; then a contained launch whose
 * backend cannot close descriptors, refused; then its own inheritable descriptors again, and it
 * writes a line to fd 40 to show the parent's pipe still works.
 */
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WireError } from '../../shared/errors.ts';
import { ProcessExecutor, type ContainedLaunch } from '../../sidecar/process/process-executor.ts';
import { inheritableDescriptors } from '../../sidecar/process/inherited-fds.ts';
import { bubblewrapProbe, compileContainment, userModeNetworkProbe } from '../../sidecar/sandbox/index.ts';
import { NEUTRAL_PROFILE, type NetworkCapability } from '../../sidecar/trust/effective-profile.ts';
import { childrenOf, descriptorsOf, fdListingStandIn, peerHoldersOf, standInRuns } from '../support/descriptors.ts';

const SLEEP = '/usr/bin/sleep';

/** The process named `comm` below `pid` (itself, or a descendant, inside the sandbox or beside it). */
function find(pid: number, comm: string): number | undefined {
  if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm) return pid;
  for (const child of childrenOf(pid)) {
    const found = find(child, comm);
    if (found !== undefined) return found;
  }
  return undefined;
}

const inheritable = (): Record<number, string> => Object.fromEntries(inheritableDescriptors().map((fd) => [fd, readlinkSync(`/proc/self/fd/${fd}`)]));

async function policyFor(dir: string, network: NetworkCapability[]): Promise<ContainedLaunch> {
  const policy = await compileContainment(
    { ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: dir, targetPath: dir, accessMode: 'read-write' }], networkCapabilities: network },
    { file: SLEEP, args: ['30'] },
    { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') },
  );
  if (policy === null) throw new Error('A profile granting a path compiles to a policy');
  return policy;
}

/**
 * What each of the sidecar's short-lived helpers holds: the real bubblewrap and slirp4netns
 * probes, run on stand-ins that list their own descriptors (and print what the real ones would).
 */
async function probed(dir: string): Promise<Record<string, { available: boolean; runs: Record<number, string>[] }>> {
  const bwrap = fdListingStandIn(dir, 'bwrap', 'ok');
  const slirp = fdListingStandIn(dir, 'slirp4netns', 'slirp4netns version 1.2.0');
  const bwrapProbe = await bubblewrapProbe(bwrap)();
  const slirpProbe = await userModeNetworkProbe(slirp)();
  return { bwrap: { available: bwrapProbe.available, runs: standInRuns(bwrap) }, slirp4netns: { available: slirpProbe.available, runs: standInRuns(slirp) } };
}

/** Each step on stderr, with the time since start: a run that does not finish says where it stopped (CI, s24). */
const started = Date.now();
const step = (what: string) => process.stderr.write(`${Date.now() - started} ms: ${what}\n`);

async function main(): Promise<void> {
  const strayBefore = inheritable();
  step('started');
  const executor = new ProcessExecutor({ termGraceMs: 200 });
  const dir = mkdtempSync(join(tmpdir(), 'sy-stray-fd-'));
  const results: Record<string, unknown> = { strayBefore };
  const launches: [string, NetworkCapability[] | null][] = [['uncontained', null], ['contained', []], ['internet-client', ['internet-client']]];
  for (const [name, network] of launches) {
    const policy = network === null ? null : await policyFor(dir, network);
    const handle = await executor.launch({ command: SLEEP, args: ['30'], env: {}, policy });
    step(`${name}: launched`);
    let server: number | undefined;
    for (let i = 0; i < 400 && server === undefined; i++) {
      server = find(handle.pid, 'sleep');
      if (server === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // `comm` reads "sleep" from early in exec, before the kernel closes close-on-exec descriptors
    // (bwrap's own), so a read at that instant can show one that is about to go. Poll until only
    // 0-2 and /dev/null remain, within a bound: a descriptor that really leaked never goes, and is reported.
    const settled = (fds: Record<number, string>) => Object.entries(fds).every(([fd, target]) => Number(fd) <= 2 || target === '/dev/null');
    let serverFds = server === undefined ? null : descriptorsOf(server);
    for (let i = 0; i < 200 && serverFds !== null && !settled(serverFds); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      serverFds = descriptorsOf(server!);
    }
    const helper = network?.includes('internet-client') ? find(process.pid, 'slirp4netns') : undefined;
    results[name] = { server: serverFds, tool: policy === null ? null : descriptorsOf(handle.pid), helper: helper === undefined ? null : descriptorsOf(helper) };
    step(`${name}: read, disposing`);
    await handle.dispose(0);
    step(`${name}: disposed`);
  }
  // A backend that cannot close descriptors in its sandbox takes no launch while there are any.
  // (bubblewrap's own spawn, with its mask taken out again)
  const bwrap = await policyFor(dir, []);
  const unable: ContainedLaunch = {
    ...bwrap,
    wrap(command, args) {
      const { inherited, ...spawn } = bwrap.wrap(command, args);
      const own = (spawn.descriptors ?? []).length - (inherited?.stdio.length ?? 0);
      return { ...spawn, args: spawn.args.slice(2 * (inherited?.fds.length ?? 0)), descriptors: spawn.descriptors?.slice(0, own) };
    },
  };
  const spawnsBefore = executor.spawnCount;
  try {
    await executor.launch({ command: SLEEP, args: ['30'], env: {}, policy: unable });
    results.refused = null;
  } catch (error) {
    const wire = error as WireError;
    results.refused = { reason: wire.reason, message: wire.message, cause: (wire.cause as Error | undefined)?.message, spawned: executor.spawnCount - spawnsBefore };
  }
  step('refused launch tried');
  await executor.disposeAll();
  step('all disposed');
  results.probes = await probed(dir);
  step('probed');
  rmSync(dir, { recursive: true, force: true });
  results.strayAfter = inheritable();
  writeSync(40, 'fd 40 still open\n');
  process.stdout.write(JSON.stringify(results) + '\n');
  step('written');
  // Nothing should be left to keep this process alive now; if something is (CI, s17, s24, s26),
  // say what, and which of its descendants still run, before the test gives up on it.
  setTimeout(() => step(`still alive: ${JSON.stringify(process.getActiveResourcesInfo())}; handles: ${JSON.stringify(handles())}; descendants: ${JSON.stringify(descendants(process.pid))}`), 5_000).unref();
}

/** Each handle keeping this process alive: its descriptor, and who holds that descriptor's other end. */
function handles(): string[] {
  const active = (process as unknown as { _getActiveHandles(): { constructor: { name: string }; _handle?: { fd?: number }; fd?: number }[] })._getActiveHandles();
  return active.map((handle) => {
    const fd = handle._handle?.fd ?? handle.fd;
    if (typeof fd !== 'number' || fd < 0) return handle.constructor.name;
    return `${handle.constructor.name} fd ${fd}, other end held by ${peerHoldersOf(fd).join('; ') || 'no process'}`;
  });
}

/** Every process below `pid`, with its command line. */
function descendants(pid: number): string[] {
  return childrenOf(pid).flatMap((child) => {
    let command: string;
    try {
      command = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      command = '(ended)';
    }
    return [`${child} ${command}`, ...descendants(child)];
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
