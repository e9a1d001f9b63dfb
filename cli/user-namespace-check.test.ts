/**
 * doctor's user namespace verdict, on the settings of kernels this machine is not: Ubuntu 24.04's
 * AppArmor restriction, Debian's `unprivileged_userns_clone`, namespaces turned off.
 */
import { describe, expect, it } from 'vitest';
import { userNamespaceCheck } from './doctor.ts';

const ubuntu = { maxNs: 15000, debianClone: null, apparmor: 1, root: false };

describe('userNamespaceCheck', () => {
  it('passes under the AppArmor restriction once bubblewrap is allowed them, as its own fix makes it (review s22: failed for ever)', () => {
    const check = userNamespaceCheck({ ...ubuntu, bwrapWorks: true });
    expect(check).toMatchObject({ ok: true, detail: expect.stringContaining('restricted, but bubblewrap is allowed them') });
    expect(check.fix).toBeUndefined();
  });

  it('fails under the restriction while bubblewrap cannot run, and suggests no sysctl key this kernel lacks', () => {
    const check = userNamespaceCheck({ ...ubuntu, bwrapWorks: false });
    expect(check.ok).toBe(false);
    expect(check.fix).toBe('Enable them: allow bwrap user namespaces in AppArmor (a profile for /usr/bin/bwrap with "userns,"), or sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0');
    expect(check.fix).not.toContain('unprivileged_userns_clone');
  });

  it('names exactly the keys that are off', () => {
    expect(userNamespaceCheck({ maxNs: 0, debianClone: 0, apparmor: null, root: false, bwrapWorks: false }).fix).toBe('Enable them: sudo sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1');
    expect(userNamespaceCheck({ maxNs: 0, debianClone: null, apparmor: null, root: true, bwrapWorks: false }).fix).toBe('Enable them: sudo sysctl -w user.max_user_namespaces=15000');
  });

  it('passes where nothing restricts them', () => {
    expect(userNamespaceCheck({ maxNs: 15000, debianClone: 1, apparmor: 0, root: false, bwrapWorks: true })).toEqual({ name: 'user namespaces', ok: true, detail: 'max_user_namespaces=15000, unprivileged_userns_clone=1, apparmor_restrict_unprivileged_userns=0' });
  });
});
