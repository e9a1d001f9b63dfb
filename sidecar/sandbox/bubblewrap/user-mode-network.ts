/**
 * `internet-client` without the host's loopback: user-mode networking for a sandbox's own network
 * namespace, through `slirp4netns` (Debian's package of the same name; DESIGN §6).
 *
 * bubblewrap always gives the sandbox a new network namespace (`--unshare-net` through
 * `--unshare-all`), which holds only its own loopback. For `internet-client` the backend starts
 * bwrap with `--block-fd`, so the command waits; once bwrap reports the sandbox's PID 1 and has
 * given its loopback an address (`sandbox-loopback.ts`: slirp4netns brings `lo` up, which
 * before that address fails bwrap's setup), this module runs
 *
 * ```
 * slirp4netns --configure --mtu 65520 --disable-host-loopback --enable-sandbox --enable-seccomp \
 *   --ready-fd 3 --exit-fd 4 --netns-type path /proc/PID/ns/net tap0
 * ```
 *
 * which gives the namespace `tap0` (10.0.2.100/24, gateway 10.0.2.2, DNS 10.0.2.3) and relays its
 * connections from the host, refusing the host's `127.0.0.1` (`--disable-host-loopback`). The
 * host's abstract Unix sockets belong to the host's network namespace and stay out of reach.
 * `--enable-sandbox --enable-seccomp` confine slirp4netns itself, since it parses the sandbox's
 * packets. On its ready byte the backend releases bwrap's block fd.
 *
 * Joining the namespace: a root sidecar joins it by path without entering the sandbox's user
 * namespace. bwrap's `--disable-userns` moves the sandbox into a nested user namespace during
 * setup, before it waits on its block fd, and a slirp4netns that joined that one could no longer
 * enter the network namespace (owned by the outer one). A sidecar that is not root has to be in
 * the outer one to configure the network, so the backend opens PID 1's user namespace as soon as
 * bwrap reports the PID ({@link openSandboxUserNamespace}), before bwrap gets that far, and
 * slirp4netns runs inside it (`nsenter --user=/proc/self/fd/5 --preserve-credentials`), where this
 * user is root: it then joins the network namespace by path as a root sidecar does. (slirp4netns's
 * own `--userns-path` cannot serve: started after the loopback is up, it found the nested
 * namespace, and with `--netns-type path` its `--enable-sandbox` step enters no user namespace
 * and fails on `setegid(0)`.) Had bwrap nested first (a loaded machine), slirp4netns could not
 * join the network: PID 1's uid map, read after the open, tells ({@link userNamespaceLevel}), and
 * that sandbox ends and the launch starts over (the executor's `LAUNCH_AGAIN`); one that keeps
 * losing fails closed (`launch-failed`), never without the policy.
 *
 * slirp4netns ends with the sandbox: the sidecar closes its exit fd and signals it when bwrap
 * exits, and the exit fd also closes when the sidecar itself dies, so none is left behind.
 *
 * @module
 */
import { openSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { WireError } from '../../../shared/errors.ts';
import type { Logger } from '../../log.ts';
import { earlySpawnError, runHelper, spawnMasked } from '../../process/masked-spawn.ts';
import { type BackendAvailability, cachedProbe, type ContainmentProbe, isLastingRun, type ProbeRun, sandboxHelper } from '../availability.ts';

/** The nameserver slirp4netns relays to the host's resolver; the sandbox's `/etc/resolv.conf` names it. */
export const USER_MODE_NAMESERVER = '10.0.2.3';

/** The sandbox's `/etc/resolv.conf` under `internet-client`: the host's may name a loopback resolver it cannot reach. */
export const USER_MODE_RESOLV_CONF = `# written by switchyard: slirp4netns relays DNS to the host's resolver\nnameserver ${USER_MODE_NAMESERVER}\n`;

const FALLBACK = '/usr/bin/slirp4netns';
/** util-linux's, which a sidecar that is not root starts slirp4netns with (`switchyard doctor` checks it). */
export const NSENTER = '/usr/bin/nsenter';
/** How long slirp4netns may take to configure the namespace before the launch fails. */
const READY_TIMEOUT_MS = 10_000;
const STDERR_BYTES = 4096;

const probed = new Map<string, Promise<BackendAvailability>>();

/** `sandboxHelper` for slirp4netns: the path the lookup took, and the refusal when the one to run was refused. */
const helper = (executable?: string) => sandboxHelper('slirp4netns', executable, (file) => `the "internet-client" network needs slirp4netns, and "${file}"`);

/**
 * The `slirp4netns` a probe checks: `executable`, else the first on the sidecar's `PATH` that no
 * server can have put there, else `/usr/bin/slirp4netns`.
 */
export function userModeNetworkExecutable(executable?: string): string {
  return executable ?? helper().path ?? FALLBACK;
}

/**
 * Whether `slirp4netns` is installed and runs; cached per executable for the life of the sidecar
 * (`cachedProbe`: unless the check itself could not run).
 *
 * @example
 * ```ts
 * (await userModeNetworkProbe('/nonexistent/slirp4netns')()).available; // false
 * ```
 */
export function userModeNetworkProbe(executable?: string): ContainmentProbe {
  return () => {
    const exe = userModeNetworkExecutable(executable);
    const refused = helper(executable).refused;
    if (refused !== undefined) return Promise.resolve(refused);
    return cachedProbe(probed, exe, () =>
      runHelper(exe, ['--version'], { env: { PATH: '/usr/bin:/bin' }, timeoutMs: 10_000 }).then(
        (run): ProbeRun => {
          const lasting = isLastingRun(run);
          if (run.ok && /slirp4netns version/.test(run.stdout)) return { lasting, availability: { available: true, executable: exe } };
          const missing = run.errno === 'ENOENT';
          return {
            lasting,
            availability: {
              available: false,
              problem: missing ? 'missing' : 'unusable',
              message: missing
                ? `Containment unavailable: the "internet-client" network needs slirp4netns, which is not installed (no "${exe}"): install it with the OS package manager, e.g. apt-get install slirp4netns or dnf install slirp4netns`
                : `Containment unavailable: the "internet-client" network needs slirp4netns, and "${exe} --version" failed: reinstall the slirp4netns package`,
            },
          };
        },
        // Not spawned: the sidecar's descriptors could not be listed or masked, so no helper runs.
        (error: Error): ProbeRun => ({ lasting: false, availability: { available: false, problem: 'unusable', message: `Containment unavailable: slirp4netns cannot be checked on this host: ${error.message}` } }),
      ),
    );
  };
}

export interface UserModeNetworkRequest {
  readonly executable: string;
  /** The sandbox's PID 1 as the host sees it (bwrap's `child-pid`). */
  readonly sandboxPid: number;
  /** For a sidecar that is not root: PID 1's first user namespace ({@link openSandboxUserNamespace}), which slirp4netns runs in. */
  readonly userNamespace?: number;
  /** util-linux's nsenter, which enters that namespace; `/usr/bin/nsenter` unless given. */
  readonly nsenter?: string;
  /** Settles when the sandbox is gone: slirp4netns ends then. */
  readonly sandboxExited: Promise<unknown>;
  readonly log: Logger;
}

/**
 * The user namespace bwrap created for the sandbox, opened while PID 1 is still in it: read at
 * once when bwrap reports the PID, before its `--disable-userns` step nests PID 1 deeper.
 *
 * @returns The descriptor (close-on-exec; the caller closes it once slirp4netns was spawned), or
 *   `undefined` when PID 1 is already gone (its exit reports why).
 */
export function openSandboxUserNamespace(sandboxPid: number): number | undefined {
  try {
    return openSync(`/proc/${sandboxPid}/ns/user`, 'r');
  } catch {
    return undefined;
  }
}

/**
 * Whether PID 1 was still in bwrap's first user namespace when `uidMap` (its `/proc/PID/uid_map`,
 * read just after {@link openSandboxUserNamespace}) was read, so the namespace opened before is
 * that one: `first` when the map is not written yet or maps 0 (with `--dev`, bwrap maps the
 * user to 0 there, to mount devpts), `nested` when it maps the user's own uid (the nested one,
 * where the sandbox runs as itself). The open comes first: nesting only goes one way, so a read
 * that still sees the first namespace proves the descriptor holds it.
 */
export function userNamespaceLevel(uidMap: string): 'first' | 'nested' {
  const first = uidMap.trim().split(/\s+/)[0];
  return first === undefined || first === '' || first === '0' ? 'first' : 'nested';
}

const networkFailed = (why: string): WireError =>
  new WireError('launch-failed', `Cannot start contained process: its user-mode network (slirp4netns) ${why}, see the sidecar log`, { detail: { backend: 'bubblewrap' } });

/**
 * Starts slirp4netns for one sandbox and resolves once the sandbox's network is configured.
 *
 * @throws WireError `containment-unavailable` when slirp4netns is missing, `launch-failed` when
 *   it exits or stays silent before configuring the network (its stderr goes to the sidecar log).
 */
export function startUserModeNetwork(request: UserModeNetworkRequest): Promise<void> {
  const { sandboxPid, log } = request;
  // Root or inside the sandbox's first user namespace, slirp4netns joins the network by path alone.
  const slirp = [
    '--configure', '--mtu', '65520', '--disable-host-loopback', '--enable-sandbox', '--enable-seccomp',
    '--ready-fd', '3', '--exit-fd', '4',
    '--netns-type', 'path', `/proc/${sandboxPid}/ns/net`, 'tap0',
  ];
  const inside = request.userNamespace !== undefined;
  const nsenter = request.nsenter ?? NSENTER;
  const [file, args] = inside ? [nsenter, ['--user=/proc/self/fd/5', '--preserve-credentials', request.executable, ...slirp]] : [request.executable, slirp];
  // What the sidecar holds without close-on-exec reaches slirp4netns only as /dev/null.
  const child = spawnMasked(file, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe', ...(inside ? [request.userNamespace!] : [])], env: { PATH: '/usr/bin:/bin' } });
  const early = earlySpawnError(child);
  if (early !== undefined) {
    return early.then((error) => {
      log.warn('User-mode network did not start', { error });
      throw networkFailed('could not be started');
    });
  }
  const ready = child.stdio[3] as Duplex;
  const exitFd = child.stdio[4] as Duplex;
  for (const stream of [ready, exitFd, child.stderr]) stream?.on('error', () => {});
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < STDERR_BYTES) stderr += chunk.toString('utf8').slice(0, STDERR_BYTES - stderr.length);
  });
  let configured = false;
  let stopping = false;
  const stop = () => {
    stopping = true;
    exitFd.end();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  void request.sandboxExited.then(stop, stop);
  child.once('exit', (code, signal) => {
    // Ended by us (the sandbox is gone, or setup failed): expected, not a lost network.
    if (configured && !stopping) log.warn('slirp4netns ended while its sandbox runs: the sandbox has lost its network', { code, signal, stderr: stderr.trim() });
  });
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (error: WireError, fields: Record<string, unknown>) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      log.warn('User-mode network did not start', { ...fields, stderr: stderr.trim() });
      stop();
      reject(error);
    };
    const timer = setTimeout(() => fail(networkFailed('did not come up in time'), { timeoutMs: READY_TIMEOUT_MS }), READY_TIMEOUT_MS);
    ready.once('data', () => {
      clearTimeout(timer);
      if (settled) return;
      settled = configured = true;
      resolve();
    });
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' && inside) {
        fail(
          new WireError('containment-unavailable', `Containment unavailable: a sidecar that is not root starts the "internet-client" network with nsenter, which is not installed (no "${nsenter}"): install util-linux`, {
            detail: { backend: 'bubblewrap' },
          }),
          { error },
        );
      } else if (error.code === 'ENOENT') {
        fail(
          new WireError('containment-unavailable', 'Containment unavailable: the "internet-client" network needs slirp4netns, which is not installed: install it with the OS package manager, e.g. apt-get install slirp4netns', {
            detail: { backend: 'bubblewrap' },
          }),
          { error },
        );
      } else fail(networkFailed('could not be started'), { error });
    });
    child.once('exit', (code, signal) => {
      if (!configured) fail(networkFailed('exited before the network was up'), { code, signal });
    });
  });
}
