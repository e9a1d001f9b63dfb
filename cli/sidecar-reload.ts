/**
 * Live config of `switchyard sidecar`: a changed config dir (sidecar.json, any mcp.json, trust
 * profiles) is checked whole, as `switchyard check DIR` checks it, and then either put in force
 * without a restart (`SidecarComposition.reload`: only the servers the change affects end) or
 * refused, every problem logged in `check`'s words, with the files last accepted kept in force.
 *
 * Keys that say who this host is (`worker`, `entity-id`, `key-file`, `user`),
 * `modern-instance-idle-seconds`, `warm-pool` and `audit` (but its `include-arguments`) apply at the next start;
 * a change to them is logged as such.
 *
 * @module
 */
import { dirname, join, relative, sep } from 'node:path';
import { ConfigFileError, parsedJsonText } from '../sidecar/config/config-file-problems.ts';
import { describeFileProblems } from '../shared/file-problems-report.ts';
import { ConfigSnapshot } from '../sidecar/config/config-snapshot.ts';
import { watchConfig, type ConfigWatch } from '../sidecar/config/config-watcher.ts';
import { loadSidecarConfig, type SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import type { SidecarComposition } from '../sidecar/host/composition.ts';
import type { Logger } from '../sidecar/log.ts';
import { checkConfigDir, type FileCheck } from './check-config-dir.ts';
import { readSidecarConfig } from './sidecar-config-file.ts';
import { LocalError } from '../shared/errors.ts';

const RESTART_KEYS = ['worker', 'entityId', 'keyFile', 'user', 'modernInstanceIdleSeconds', 'warmPool', 'audit'] as const;
/** Each as sidecar.json spells it, which is what the operator edited and reads in the log. */
const FILE_KEY: Record<(typeof RESTART_KEYS)[number], string> = {
  worker: 'worker',
  entityId: 'entity-id',
  keyFile: 'key-file',
  user: 'user',
  modernInstanceIdleSeconds: 'modern-instance-idle-seconds',
  warmPool: 'warm-pool',
  audit: 'audit',
};

export interface SidecarReloadOptions {
  dir: string;
  sidecar: SidecarComposition;
  /** The config the sidecar started with, and the snapshot it was taken with. */
  config: SidecarConfig;
  snapshot: ConfigSnapshot;
  /** Flags given on the command line (they win over sidecar.json, as at start). */
  overrides: { worker?: string; entityId?: string };
  log: Logger;
  /** Runs after each reload that put a change in force (`switchyard start` then tells its worker the demo profile's revision). */
  onReloaded?: () => Promise<void>;
}

/** What of `key` waits for the next start: all of it but `audit`'s `include-arguments`, which a reload applies. */
function atStart(config: SidecarConfig, key: (typeof RESTART_KEYS)[number]): unknown {
  if (key !== 'audit' || config.audit === undefined) return config[key];
  const { 'include-arguments': _applied, ...rest } = config.audit;
  return rest;
}

/** How many times one reload checks a config dir that changes while it is checked. */
const MAX_CHECKS = 3;

/** One reload of the config dir; calls never overlap. */
export function createSidecarReloader(options: SidecarReloadOptions): (trigger: string) => Promise<void> {
  const { dir, sidecar, log } = options;
  let accepted = options.snapshot;
  let refused: ConfigSnapshot | null = null;
  /** The refused files' problems, said again to an operator who asks (SIGHUP) before they change. */
  let refusedProblems: ReturnType<typeof describedProblems> = [];
  let queue: Promise<unknown> = Promise.resolve();
  const once = async (trigger: string, attempt = 1): Promise<void> => {
    const before = ConfigSnapshot.take(dir);
    if (before.equals(accepted)) {
      // After a refusal, the files put back as they were are news: the last line said they were refused.
      if (refused !== null) {
        // Launches keep reading the snapshot, which is what the files hold again.
        refused = null;
        log.info('Sidecar config files match the config in force again', { trigger });
      } else if (trigger === 'SIGHUP') log.info('Sidecar config unchanged: nothing to reload', { trigger });
      return;
    }
    if (refused !== null && before.equals(refused)) {
      // A file event with no change is an editor's touch; a SIGHUP is an operator asking, who is owed an answer.
      if (trigger === 'SIGHUP') log.error('Sidecar config refused: the config in force stays', { trigger, problems: refusedProblems });
      return;
    }
    const verdict = await checkSidecarDir(dir, options.overrides, options.config);
    const after = ConfigSnapshot.take(dir);
    // Changed while being checked: what was checked is not what is there. Checked again, as no
    // event may follow (a SIGHUP on a network file system), a few times while edits go on.
    if (!after.equals(before)) {
      if (attempt < MAX_CHECKS) return once(trigger, attempt + 1);
      log.warn('Sidecar config kept changing while it was checked: not reloaded; send SIGHUP once the edit is done', { trigger, checks: attempt });
      return;
    }
    logProblemsLetThrough(log, verdict, { trigger });
    if (verdict.refuses) {
      refused = after;
      refusedProblems = describedProblems(verdict.bad);
      sidecar.refuseConfig();
      log.error('Sidecar config refused: the config in force stays', { trigger, problems: refusedProblems });
      return;
    }
    // The settings of what was checked, not of the disk, which may hold a newer, unchecked file.
    const next = loadSidecarConfig(dir, options.overrides, (file) => parsedJsonText(file, after.texts.get(file)));
    const needRestart = RESTART_KEYS.filter((key) => JSON.stringify(atStart(next, key)) !== JSON.stringify(atStart(options.config, key)));
    if (needRestart.length > 0) log.warn('Sidecar config changes that apply at the next start', { keys: needRestart.map((key) => FILE_KEY[key]) });
    const ended = await sidecar.reload({
      snapshot: after,
      trust: { ...(next.trustFloor !== undefined ? { floor: next.trustFloor } : {}), allowUncontained: next.allowUncontained },
      sandbox: next.sandbox,
      limits: next.limits,
      includeArguments: next.audit?.['include-arguments'] === true,
    });
    accepted = after;
    refused = null;
    log.info('Sidecar config reloaded', { trigger, endedServers: ended });
    await options.onReloaded?.();
  };
  return (trigger) => {
    const run = queue.then(() => once(trigger));
    queue = run.catch((error: unknown) => log.error('Sidecar config reload failed', { trigger, error }));
    return run;
  };
}

/**
 * A config dir as `check DIR` judges it, with the command line's flags on top: the files with
 * problems (`bad`), and of them, when they are all trust profiles, those (`brokenProfiles`). A
 * profile that cannot be read refuses the launches under it only: refusing the whole dir for it
 * would keep every other edit out, a narrowing of another profile included. A floor is another
 * matter, every launch going through it: a broken one is a problem of the file naming it
 * (`check`'s cross-file check), which refuses. A profile is known by where it is, not how it
 * failed: one that is no JSON at all, empty or unreadable is a file problem to `check`, and
 * refuses its launches all the same. Used at start and at each reload, so the two never differ.
 */
export async function checkSidecarDir(dir: string, overrides: SidecarReloadOptions['overrides'], self: { entityId: string; user: string }): Promise<DirVerdict> {
  const results = (await checkConfigDir(dir)).map((r) => withOverrides(r, dir, overrides));
  const problems = results.filter((r) => r.issues.length > 0);
  // Another host's or user's layer of a shared dir is not read here: its problems are that
  // host's to refuse, never a reason to refuse this one's start or edits (review s22).
  const readHere = (r: FileCheck) => {
    const [group, name] = relative(dir, r.file).split(sep);
    return group === 'users' ? name === self.user : group === 'machines' ? name === self.entityId : true;
  };
  const bad = problems.filter(readHere);
  const isProfile = (r: FileCheck) => dirname(r.file) === join(dir, 'trust-profiles') && r.file.endsWith('.json');
  const brokenProfiles = bad.length > 0 && bad.every(isProfile) ? bad : [];
  return { bad, brokenProfiles, others: problems.filter((r) => !readHere(r)), refuses: bad.length > 0 && brokenProfiles.length === 0 };
}

/** A config dir's verdict (`checkSidecarDir`). */
export interface DirVerdict {
  /** Files this host reads that have problems. */
  bad: FileCheck[];
  /** Of those, when they are all trust profiles, all of them: they refuse only the launches under them. */
  brokenProfiles: FileCheck[];
  /** Files of other hosts' or users' layers with problems, not read here. */
  others: FileCheck[];
  /** Whether the dir is refused (`bad`, and not only trust profiles). */
  refuses: boolean;
}

/** Each file's problems as `check` reports them. */
export function describedProblems(files: readonly FileCheck[]): string[] {
  return files.map((r) => describeFileProblems(r.file, r.kind, r.issues));
}

/** Logs what a dir's verdict lets through but has problems: trust profiles refused, other layers not read here. */
export function logProblemsLetThrough(log: Logger, verdict: DirVerdict, fields: Record<string, unknown> = {}): void {
  if (verdict.others.length > 0) log.warn('Other hosts\' or users\' config layers have problems: not read on this host', { ...fields, problems: describedProblems(verdict.others) });
  if (verdict.brokenProfiles.length > 0) log.error('Trust profiles refused: launches under them are refused until they are fixed', { ...fields, problems: describedProblems(verdict.brokenProfiles) });
}

/**
 * sidecar.json as the sidecar reads it: with the command line's `--worker` / `--entity-id` on top,
 * so a key given there (or a sidecar.json left out for them) is no problem, as at start.
 */
/** A dir's sidecar.json check with the sidecar's `--worker` / `--entity-id` on top, as a start reads it. */
export function withOverrides(result: FileCheck, dir: string, overrides: SidecarReloadOptions['overrides']): FileCheck {
  if (result.file !== join(dir, 'sidecar.json') || Object.keys(overrides).length === 0) return result;
  try {
    readSidecarConfig(dir, overrides);
  } catch (error) {
    // First: a ConfigFileError is an invalid-config LocalError too, and its issues are the ones
    // with the flags on top (a file's "worker: is required" is no problem under --worker).
    if (error instanceof ConfigFileError) return { ...result, kind: 'sidecar config', issues: [...error.issues] };
    // A sidecar.json that cannot be read is a refusal like any other (the file check says why), not a failed reload.
    if (error instanceof LocalError && error.code === 'invalid-config') {
      return { ...result, kind: 'sidecar config', issues: result.issues.length > 0 ? result.issues : [{ path: '(root)', message: error.message }] };
    }
    throw error;
  }
  // Cross-file problems (a floor that does not resolve) stand whatever the flags say.
  return { ...result, kind: 'sidecar config', issues: result.issues.filter((i) => i.path === 'trust-profile') };
}

/** Watches the dir (and SIGHUP) and reloads on every change. */
export function watchSidecarConfig(options: SidecarReloadOptions): ConfigWatch {
  const reload = createSidecarReloader(options);
  return watchConfig({ dir: options.dir, recursive: true, onChange: (trigger) => void reload(trigger).catch(() => {}), log: options.log });
}
