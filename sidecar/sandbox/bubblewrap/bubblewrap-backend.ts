/**
 * The bubblewrap backend (Linux): `bwrap [--args N …] --json-status-fd 3 [--block-fd 4]
 * --seccomp N [...policy.args] -- command ...args` (N after the grants and launch roots; the
 * filter is `seccomp-filter.ts`'s), spawned with no environment (the policy's is set inside the
 * sandbox, from an `--args` descriptor, `environmentArgs`) and the
 * descriptors of `bubblewrap-descriptors.ts` (the grant sources and launch roots opened at this
 * launch, `grant-descriptors.ts`, so a cached policy holds paths and never a descriptor; the
 * `--args` close what the sidecar holds without close-on-exec),
 * ready as soon as the sandbox runs the command (`bubblewrap-ready.ts`) — for `internet-client`
 * once slirp4netns, started after bwrap addressed the loopback (`sandbox-loopback.ts`), has
 * configured its network (`user-mode-network.ts`) — and a `bwrap: …` line
 * on stderr explaining a setup failure.
 *
 * @module
 */
import { closeSync, readFileSync } from 'node:fs';
import { LAUNCH_AGAIN, type SandboxDescriptor, type SandboxReadiness, type SpawnedSandbox } from '../../process/contained-launch.ts';
import { type DescriptorMask, maskInheritableDescriptors } from '../../process/inherited-fds.ts';
import type { BubblewrapPolicy, BubblewrapPolicyFields } from '../containment-policy.ts';
import { containedLaunch, type SandboxBackend } from '../sandbox-backend.ts';
import { sandboxToolFailure } from '../setup-failure.ts';
import { descriptorLayout } from './bubblewrap-descriptors.ts';
import { readChildPid, whenCommandRuns } from './bubblewrap-ready.ts';
import { whenLoopbackAddressed } from './sandbox-loopback.ts';
import { bubblewrapPolicy, ETC_ENTRIES, SYSTEM_DIRS } from './bubblewrap.ts';
import { bubblewrapProbe } from './bubblewrap-probe.ts';
import { openGrantSources } from './grant-descriptors.ts';
import { seccompFilter } from './seccomp-filter.ts';
import { openSandboxUserNamespace, startUserModeNetwork, USER_MODE_RESOLV_CONF, userNamespaceLevel } from './user-mode-network.ts';
import { LocalError, WireError } from '../../../shared/errors.ts';

/**
 * bwrap's `--args` for `env`: every variable cleared, then each of `env` set (NUL-separated).
 *
 * @throws WireError `launch-failed` for a name or value holding a NUL, or a name that is empty or
 *   holds `=`: in the descriptor a NUL would end the argument and begin bwrap options of its own
 *   (a mount), where a spawn's environment refused it.
 */
export function environmentArgs(env: Readonly<Record<string, string>>): string {
  const args = ['--clearenv'];
  for (const [name, value] of Object.entries(env)) {
    if (name === '' || name.includes('=') || name.includes('\0') || value.includes('\0')) {
      throw new WireError('launch-failed', 'Cannot start contained process: an environment variable has an empty name, or a name or value holding "=" (in a name) or a NUL byte', { cause: new LocalError('invalid-environment', `environment variable "${name.replaceAll('\0', '\\0').slice(0, 64)}"`) });
    }
    args.push('--setenv', name, value);
  }
  return `${args.join('\0')}\0`;
}

/**
 * bwrap passes every descriptor it does not use itself on to the command, and has no option to
 * close one; but it reads an `--args` descriptor to its end and closes it, and the mask's are on
 * `/dev/null` (entries of the same spawn's `descriptors`, so whoever spawns it puts them there),
 * whose end comes at once, with no argument.
 */
function closing(inherited: DescriptorMask | null): string[] {
  return inherited?.fds.flatMap((fd) => ['--args', String(fd)]) ?? [];
}

/** Resolves with `promise`, or `undefined` once `signal` fires; a later rejection is left to `promise`'s own handlers. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The sandbox's setup after bwrap started: its PID 1, and for `internet-client` its network,
 * then the block fd released. Goes on when the executor stops waiting; a network that fails
 * after that ends the sandbox, since the command would wait on its block fd for ever.
 */
async function finishSetup(policy: BubblewrapPolicyFields, sandbox: SpawnedSandbox): Promise<number | null> {
  const layout = descriptorLayout(policy.network);
  const status = sandbox.descriptors[layout.status - 3];
  if (status === null || status === undefined) return null;
  const pid = await readChildPid(status);
  if (pid === null) return null;
  if (policy.network !== 'internet-client') {
    sandbox.adopt(pid);
    return pid;
  }
  // At once, in the same tick as the PID: a sidecar that is not root configures the network from there (user-mode-network.ts).
  const root = process.getuid?.() === 0;
  const userNamespace = root ? undefined : openSandboxUserNamespace(pid);
  sandbox.adopt(pid);
  if (!root && userNamespace === undefined) return null; // PID 1 is gone already: bwrap's exit says why
  try {
    if (userNamespace !== undefined && userNamespaceLevel(readUidMap(pid)) === 'nested') {
      // Reached too late: slirp4netns could not join the network from there. Start over.
      sandbox.kill();
      throw new LocalError(LAUNCH_AGAIN, 'The sandbox nested its user namespace before the sidecar could open the first one (a loaded machine): launching again');
    }
    const block = layout.block === undefined ? undefined : sandbox.descriptors[layout.block - 3];
    if (policy.userModeNetwork === undefined || block === null || block === undefined) {
      sandbox.kill();
      return null;
    }
    // slirp4netns brings `lo` up first thing; before bwrap has addressed it, that fails bwrap's own setup (sandbox-loopback.ts).
    const loopback = await whenLoopbackAddressed(pid);
    if (loopback === 'gone') return null; // bwrap failed during setup: its exit says why
    if (loopback === 'unknown') sandbox.log.warn('Cannot tell whether bwrap has set up the sandbox loopback: starting its network anyway', { pid });
    try {
      await startUserModeNetwork({ executable: policy.userModeNetwork, sandboxPid: pid, sandboxExited: sandbox.exited, log: sandbox.log, ...(userNamespace !== undefined ? { userNamespace } : {}) });
    } catch (error) {
      sandbox.kill();
      throw error;
    }
    block.end('1');
    return pid;
  } finally {
    if (userNamespace !== undefined) closeSync(userNamespace);
  }
}

/** PID 1's uid map; empty when it cannot be read (PID 1 gone: its exit says why). */
function readUidMap(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/uid_map`, 'utf8');
  } catch {
    return '';
  }
}

export const bubblewrapBackend: SandboxBackend<BubblewrapPolicyFields> = {
  name: 'bubblewrap',
  systemPaths: [...SYSTEM_DIRS, ...ETC_ENTRIES],
  probe: () => bubblewrapProbe(),
  compile: bubblewrapPolicy,
  wrap: (policy, command, args) => {
    const layout = descriptorLayout(policy.network);
    // Here and not in the compiled args, so no policy (a hand-written or an older cached one) runs without it.
    const filter = seccompFilter();
    // Before anything is opened: a refused environment leaves nothing to close.
    const environmentText = environmentArgs(policy.env);
    const grants = openGrantSources(policy.grantSources ?? [], policy.launchRoots ?? []);
    const descriptors: SandboxDescriptor[] = ['pipe'];
    if (layout.block !== undefined) descriptors.push('pipe', { data: USER_MODE_RESOLV_CONF });
    descriptors.push(...grants.fds.map((fd) => ({ fd })), { data: filter });
    const seccomp = layout.seccomp(grants.fds.length);
    // The server's environment is set inside the sandbox only, read from a descriptor (argv is
    // anyone's to read in /proc). bwrap itself, and prlimit or setpriv before it, run on the host
    // with none: LD_LIBRARY_PATH or LD_PRELOAD there, pointed at a directory the server may write,
    // would run what the server planted outside the sandbox at its next launch.
    descriptors.push({ data: environmentText });
    const environment = layout.environment(grants.fds.length);
    let inherited: DescriptorMask | null;
    try {
      inherited = maskInheritableDescriptors(3 + descriptors.length);
    } catch (error) {
      grants.close();
      throw error;
    }
    if (inherited !== null) descriptors.push(...inherited.stdio.map((entry): SandboxDescriptor => (entry === 'ignore' ? 'ignore' : { fd: entry })));
    return {
      file: policy.executable,
      args: [
        ...closing(inherited),
        '--args', String(environment),
        '--json-status-fd', String(layout.status), ...(layout.block !== undefined ? ['--block-fd', String(layout.block)] : []), '--seccomp', String(seccomp),
        ...policy.args, '--', command, ...args,
      ],
      env: {},
      cwd: policy.cwd,
      descriptors,
      inherited,
      release: () => {
        grants.close();
        inherited?.close();
      },
    };
  },
  whenReady: async (policy, sandbox, signal): Promise<SandboxReadiness> => {
    const setup = finishSetup(policy, sandbox);
    setup.catch(() => {}); // after an abort the failure is handled by ending the sandbox
    const pid = await untilAborted(setup, signal);
    return pid === undefined || pid === null ? 'unknown' : whenCommandRuns(pid, signal);
  },
  classifyFailure: (stderr, exit) => sandboxToolFailure('bubblewrap', 'bwrap: ', stderr, exit),
};

/** A bubblewrap policy from its fields (the compiler's, or a test's hand-written ones). */
export function bubblewrapLaunch(fields: BubblewrapPolicyFields): BubblewrapPolicy {
  return containedLaunch(bubblewrapBackend, fields);
}
