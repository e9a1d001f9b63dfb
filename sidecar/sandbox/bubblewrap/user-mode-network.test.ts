import { closeSync, openSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WireError } from '../../../shared/errors.ts';
import { silentLogger } from '../../log.ts';
import { startUserModeNetwork, userNamespaceLevel } from './user-mode-network.ts';

describe('the level of user namespace a uid map shows', () => {
  it('is the first one before bwrap writes its map or while it maps the user to 0 (for devpts), nested once it maps the user to itself', () => {
    expect(userNamespaceLevel('')).toBe('first');
    expect(userNamespaceLevel('         0      61000          1\n')).toBe('first');
    expect(userNamespaceLevel('     61000      61000          1\n')).toBe('nested');
  });
});

describe.runIf(process.platform === 'linux')('the user-mode network of a sidecar that is not root', () => {
  it('names nsenter, not slirp4netns, when nsenter is what is missing', async () => {
    const userNamespace = openSync('/proc/self/ns/user', 'r');
    try {
      const started = startUserModeNetwork({
        // Neither exists: whatever goes wrong, nothing configures this test's own network namespace.
        executable: '/nonexistent/slirp4netns',
        sandboxPid: process.pid,
        userNamespace,
        nsenter: '/nonexistent/nsenter',
        sandboxExited: new Promise(() => {}),
        log: silentLogger,
      });
      const error = await started.then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(WireError);
      expect(error).toMatchObject({
        reason: 'containment-unavailable',
        message: 'Containment unavailable: a sidecar that is not root starts the "internet-client" network with nsenter, which is not installed (no "/nonexistent/nsenter"): install util-linux',
      });
    } finally {
      closeSync(userNamespace);
    }
  });
});
