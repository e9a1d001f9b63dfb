/**
 * The bubblewrap backend (Linux): `bwrap --json-status-fd 3 [...policy.args] -- command ...args`,
 * spawned with exactly the policy's environment, ready as soon as the sandbox runs the command
 * (`bubblewrap-ready.ts`), and a `bwrap: …` line on stderr explaining a setup failure.
 *
 * @module
 */
import type { Readable } from 'node:stream';
import type { BubblewrapPolicy, BubblewrapPolicyFields } from '../containment-policy.ts';
import { containedLaunch, type SandboxBackend } from '../sandbox-backend.ts';
import { sandboxToolFailure } from '../setup-failure.ts';
import { whenSandboxReady } from './bubblewrap-ready.ts';
import { bubblewrapPolicy } from './bubblewrap.ts';
import { bubblewrapProbe } from './bubblewrap-probe.ts';

/** bwrap writes its JSON status to the first extra pipe, fd 3. */
const STATUS_FD = '3';

export const bubblewrapBackend: SandboxBackend<BubblewrapPolicyFields> = {
  name: 'bubblewrap',
  probe: () => bubblewrapProbe(),
  compile: bubblewrapPolicy,
  wrap: (policy, command, args) => ({
    file: policy.executable,
    args: ['--json-status-fd', STATUS_FD, ...policy.args, '--', command, ...args],
    env: policy.env,
    cwd: policy.cwd,
    extraPipes: 1,
  }),
  whenReady: (extra: readonly Readable[], signal: AbortSignal) => {
    const status = extra[0];
    return status === undefined ? Promise.resolve('unknown') : whenSandboxReady(status, signal);
  },
  classifyFailure: (stderr, exit) => sandboxToolFailure('bubblewrap', 'bwrap: ', stderr, exit),
};

/** A bubblewrap policy from its fields (the compiler's, or a test's hand-written ones). */
export function bubblewrapLaunch(fields: BubblewrapPolicyFields): BubblewrapPolicy {
  return containedLaunch(bubblewrapBackend, fields);
}
