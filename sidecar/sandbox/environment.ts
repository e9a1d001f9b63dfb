/**
 * The complete environment of a contained process (DESIGN §5: empty plus an allow-list).
 *
 * Built from three sources, later ones winning: the names in `environment.inherit` copied from the
 * sidecar's own environment (only those set there), then the server config's own `env` (written
 * by the sidecar admin next to the command), then the profile's `environment.set` (the profile has
 * the last word). `HOME` defaults to `/tmp`, the sandbox's private temp dir, because the real home
 * is never exposed and many tools fail without a `HOME`.
 *
 * Nothing else leaks through: the backend sets exactly this environment inside the sandbox (for
 * bubblewrap, `--clearenv` and `--setenv` read from a descriptor, never in an argv that other
 * local users can read from `/proc/<pid>/cmdline`), and the launcher itself runs with none.
 *
 * @module
 */
import type { EnvironmentRule } from '../trust/effective-profile.ts';

/** The sandbox-side `HOME` when neither the profile nor the server config sets one. */
export const CONTAINED_HOME = '/tmp';

/**
 * @param rule The effective profile's environment rule (`undefined` = no inherited or fixed names).
 * @param serverEnv The server config's `env`.
 * @param sidecarEnv The sidecar's own environment (`process.env`).
 * @returns The exact environment for the contained process.
 * @example Only allowed names pass
 * ```ts
 * containedEnvironment({ inherit: ['LANG'], set: { NODE_ENV: 'production' } }, { API_URL: 'x' },
 *   { LANG: 'C.UTF-8', AWS_SECRET_ACCESS_KEY: 's' });
 * // { LANG: 'C.UTF-8', API_URL: 'x', NODE_ENV: 'production', HOME: '/tmp' }
 * ```
 */
export function containedEnvironment(
  rule: EnvironmentRule | undefined,
  serverEnv: Readonly<Record<string, string>> | undefined,
  sidecarEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of rule?.inherit ?? []) {
    const value = sidecarEnv[name];
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, serverEnv, rule?.set);
  env['HOME'] ??= CONTAINED_HOME;
  return env;
}
