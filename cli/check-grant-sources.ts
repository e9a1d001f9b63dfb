/**
 * For `switchyard check` on a trust profile: each granted path as a launch on this machine would
 * open it (`openGrantSources`, the sidecar's own rule). A grant that is a symbolic link, goes
 * through one, or is not there yet is refused at every contained launch under the profile, which
 * `check` used to call ok (QA s30). A warning, not a problem: the profile may be checked away from
 * the host it runs on, and a path may be made before the first launch.
 *
 * @module
 */
import { normalize } from 'node:path';
import { LocalError, WireError } from '../shared/errors.ts';
import type { ValidationIssue } from '../shared/validation.ts';
import { openGrantSources } from '../sidecar/sandbox/bubblewrap/grant-descriptors.ts';

export function grantSourceWarnings(grants: ReadonlyArray<{ readonly 'source-path': string }>, platform: NodeJS.Platform = process.platform): ValidationIssue[] {
  // The rule is bubblewrap's (Linux): Seatbelt names paths in its profile instead.
  if (platform !== 'linux') return [];
  return grants.flatMap((grant, i) => {
    const source = normalize(grant['source-path']).replace(/(?<=.)\/$/, '');
    try {
      openGrantSources([source]).close();
      return [];
    } catch (error) {
      const local = error instanceof WireError ? error.cause : undefined;
      if (!(local instanceof LocalError)) throw error;
      const refusal = 'every contained launch under this profile is refused (launch-failed)';
      // The sidecar log's words, less the path they name first: the key says which grant it is.
      const problem = local.message.startsWith(`Granted path "${source}" `) ? local.message.slice(`Granted path "${source}" `.length) : local.message;
      const message = local.code === 'grant-missing' ? `does not exist on this machine: ${refusal} until it does` : `${problem}: ${refusal}; name the real path in the profile`;
      return [{ path: `filesystem-paths[${i}].source-path`, message }];
    }
  });
}
