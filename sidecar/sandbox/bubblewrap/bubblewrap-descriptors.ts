/**
 * Which bwrap descriptor is which: the compiler writes the numbers into bwrap's arguments and
 * the backend hands the executor the descriptors in the same order (`SandboxSpawn.descriptors`),
 * so both read one layout.
 *
 * | fd | what | when |
 * |---|---|---|
 * | 3 | `--json-status-fd`: bwrap reports the sandbox's PID 1 | always |
 * | 4 | `--block-fd`: the command waits until the network is up | `internet-client` |
 * | 5 | `--ro-bind-data`: the sandbox's `/etc/resolv.conf` | `internet-client` |
 * | next | `--bind-fd` / `--ro-bind-fd`: one per grant, in order | each grant |
 * | next | `--ro-bind-fd`: one per implicit launch root outside the grants, in order | each such root |
 * | next | `--seccomp`: the filter (`seccomp-filter.ts`), after every mount so their numbers stay put | always |
 * | next | `--args`: `--clearenv` and the server's `--setenv`s, its environment set inside the sandbox only | always |
 *
 * @module
 */
import type { ContainedNetwork } from '../../trust/effective-profile.ts';

export const STATUS_FD = 3;

export interface DescriptorLayout {
  readonly status: number;
  readonly block?: number;
  readonly resolvConf?: number;
  /** The descriptor of grant `i`. */
  grant(i: number): number;
  /** The descriptor of launch root `i`, after a launch's `grants` grants. */
  launchRoot(grants: number, i: number): number;
  /** The seccomp filter's descriptor, after a launch's `mounts` grants and launch roots. */
  seccomp(mounts: number): number;
  /** The server's environment (`--args`), after the seccomp filter. */
  environment(mounts: number): number;
}

export function descriptorLayout(network: ContainedNetwork | undefined): DescriptorLayout {
  const first = network === 'internet-client' ? 6 : 4;
  const grant = (i: number) => first + i;
  const launchRoot = (grants: number, i: number) => grant(grants + i);
  const seccomp = (mounts: number) => grant(mounts);
  const environment = (mounts: number) => seccomp(mounts) + 1;
  if (network === 'internet-client') return { status: STATUS_FD, block: 4, resolvConf: 5, grant, launchRoot, seccomp, environment };
  return { status: STATUS_FD, grant, launchRoot, seccomp, environment };
}
