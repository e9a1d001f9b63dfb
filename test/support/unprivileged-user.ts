/**
 * What the tests that run a sidecar's tools as a user other than root need: a uid no account has,
 * and whether such a user may make the user namespaces bwrap needs (what `switchyard doctor` checks).
 */
import { existsSync, readFileSync } from 'node:fs';

/** A uid no account has, from `from` up: nothing it writes belongs to anyone, and it holds no group. */
export function unusedUid(from = 61_000): number {
  const taken = new Set(readFileSync('/etc/passwd', 'utf8').split('\n').map((line) => Number(line.split(':')[2])));
  let uid = from;
  while (taken.has(uid)) uid++;
  return uid;
}

const readNumber = (path: string): number | null => (existsSync(path) ? Number(readFileSync(path, 'utf8').trim()) : null);

/** Whether a user other than root may create user namespaces here. */
export const unprivilegedUserNamespaces =
  readNumber('/proc/sys/user/max_user_namespaces') !== 0 && readNumber('/proc/sys/kernel/unprivileged_userns_clone') !== 0 && readNumber('/proc/sys/kernel/apparmor_restrict_unprivileged_userns') !== 1;
