/**
 * What a valid worker config asks that works but exposes more than its operator likely meant, as
 * `path: message` warnings: `switchyard check` prints them, and the worker logs them when it
 * starts and when it reads a changed config. A warning never stops a config: a refusal that a
 * deliberate set-up needs (a worker on a trusted LAN over http) would only be worked around.
 *
 * @module
 */
import { isCleartextRemote } from '../../shared/loopback.ts';
import type { ValidationIssue } from '../../shared/validation.ts';
import type { WorkerConfig } from './worker-config.ts';

export function workerConfigWarnings(config: WorkerConfig): ValidationIssue[] {
  const warnings: ValidationIssue[] = [];
  const publicUrl = config['public-url'];
  // The built-in OAuth server refuses this outright (config-checks.ts); without it, agents' bearer
  // tokens still cross whatever network lies between.
  if (publicUrl !== undefined && isCleartextRemote(publicUrl)) {
    warnings.push({
      path: 'public-url',
      message:
        'is plain http off this machine: agents send their bearer tokens, and every call\'s arguments and answers, readable by anyone on the network between, ' +
        'and a sidecar on another machine refuses to link to it; put TLS in front of the worker and set its https URL (plain http is for loopback, or a network you trust as you trust its every user)',
    });
  }
  return warnings;
}
