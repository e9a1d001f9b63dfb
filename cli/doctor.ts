/**
 * `switchyard doctor`: checks what Switchyard needs from this machine, each with what to do.
 *
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { type HelperResult, runHelper } from '../sidecar/process/masked-spawn.ts';
import { bubblewrapExecutable, bubblewrapProbe, NSENTER, userModeNetworkExecutable, userModeNetworkProbe } from '../sidecar/sandbox/index.ts';
import { denoBinaryPath } from './deno-binary.ts';
import { findPrlimit } from '../sidecar/process/address-space-limit.ts';
import { CGROUP_FIX, cgroupReadiness } from '../sidecar/process/server-cgroups.ts';
import type { CgroupPlacement } from '../sidecar/process/cgroup-placement.ts';
import { findSetpriv, takesParentDeathSignal } from '../sidecar/process/parent-death.ts';
import { fetchErrorText } from '../shared/fetch-error-text.ts';
import { readStreamWithin } from '../shared/bounded-stream.ts';

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do when the check fails. */
  fix?: string;
  /** A failure that is information, not a failure: what this machine lacks, it does not need (printed `info`). */
  informational?: boolean;
}

/** Whether doctor passes: every check ok, or failed only as information. */
export function doctorPassed(checks: readonly DoctorCheck[]): boolean {
  return checks.every((c) => c.ok || c.informational === true);
}

/** Said of a sandbox tool on a machine that launches no server. */
const ONLY_WHERE_SERVERS_RUN = 'needed only on a machine that runs servers: a workstation, or this one under worker --runtime node';

/**
 * A tool's `--version`, through the sidecar's masked spawn so that no descriptor doctor inherited
 * reaches it: its stdout when it exits 0; else its stderr, the errno, or what failed, in the
 * words the report has always used (`ETIMEDOUT`, `Command failed: …`, as `execFileSync` put them).
 */
async function run(file: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  let result: HelperResult;
  try {
    result = await runHelper(file, args, { timeoutMs: 10_000 });
  } catch (error) {
    return { ok: false, out: (error as Error).message }; // the spawn was refused: doctor's descriptors could not be listed
  }
  if (result.ok) return { ok: true, out: result.stdout.trim() };
  return { ok: false, out: result.stderr.trim() || (result.timedOut ? 'ETIMEDOUT' : result.errno) || `Command failed: ${[file, ...args].join(' ')}` };
}

function readNumber(path: string): number | null {
  try {
    return Number(readFileSync(path, 'utf8').trim());
  } catch {
    return null;
  }
}

export interface DoctorOptions {
  worker?: string;
  bwrap?: string;
  slirp4netns?: string;
  nsenter?: string;
  root?: boolean;
  deno?: boolean;
  env?: Readonly<Record<string, string | undefined>>;
  sandbox?: 'required' | 'informational';
  /** Where this process's cgroups are; read from /proc/self unless given. */
  cgroups?: CgroupPlacement;
}

/**
 * `deno: false` leaves out the Deno check: a workstation's sidecar (`dist/sidecar.js`) runs no worker.
 * `root` (this process's own uid unless given) decides whether nsenter is checked: only a sidecar
 * that is not root starts slirp4netns through it. `sandbox: 'informational'` on a machine that
 * launches no server (the worker's, which needs Node and nothing else): what bubblewrap, user
 * namespaces, slirp4netns, util-linux and nsenter lack is said, as information, and fails nothing.
 */
export async function runDoctor(options: DoctorOptions = {}): Promise<DoctorCheck[]> {
  const checks = await sandboxChecks(options);
  if (options.sandbox === 'informational') {
    for (const check of checks) if (!check.ok) Object.assign(check, { informational: true, detail: `${check.detail}; ${ONLY_WHERE_SERVERS_RUN}` });
  }
  if (options.deno !== false) try {
    const deno = denoBinaryPath();
    const v = await run(deno, ['--version']);
    checks.push(v.ok ? { name: 'deno found', ok: true, detail: v.out.split('\n')[0] ?? deno } : { name: 'deno found', ok: false, detail: v.out, fix: 'Reinstall: npm ci' });
  } catch (error) {
    checks.push({ name: 'deno found', ok: false, detail: (error as Error).message, fix: 'Run: npm install' });
  }
  if (options.worker !== undefined && !URL.canParse(options.worker)) {
    checks.push({ name: 'worker reachable', ok: false, detail: `"${options.worker}" is not an absolute URL`, fix: 'Give the worker\'s URL, e.g. --worker https://yard.example.com' });
  } else if (options.worker !== undefined) {
    const url = new URL('/healthz', options.worker.replace(/^ws/, 'http')).toString();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
      // A worker answers /healthz `{"ok":true}` to anyone (its details only with a token): another
      // answer is another server at that address, or a proxy in front of none. Its refusal (a
      // Host it does not allow) says why in its JSON error, which is passed on (review s22).
      const answer = await healthzAnswer(res);
      const ok = res.ok && answer.ok === true;
      const refusal = typeof answer.error?.message === 'string' ? `: ${answer.error.message.slice(0, 300)}` : '';
      checks.push({
        name: 'worker reachable',
        ok,
        detail: `${url} answered ${res.status}${ok ? '' : res.ok ? ', not a Switchyard worker\'s {"ok":true}' : refusal}`,
        ...(ok ? {} : refusal !== '' ? { fix: `The worker at ${options.worker} refused this request: see why above` } : { fix: `Something answers at ${options.worker}, but not a Switchyard worker: check the URL given to --worker, and any proxy in front of the worker` }),
      });
    } catch (error) {
      // Node says only "fetch failed"; the cause's code says why (refused, unknown name, a TLS problem).
      // The URL is always --worker's: the workstation's own link check words sidecar.json's.
      checks.push({
        name: 'worker reachable',
        ok: false,
        detail: `${url}: ${fetchErrorText(error)}`,
        fix: `Check that the worker runs and listens at ${options.worker} (--worker): on its machine, switchyard worker --config FILE; or fix the URL given to --worker`,
      });
    }
  }
  return checks;
}

/** What a worker's `/healthz` says: `{}` when it is not JSON (or past 64 KiB, which no answer of a worker is). */
async function healthzAnswer(res: Response): Promise<{ ok?: unknown; error?: { message?: unknown } }> {
  const text = await readStreamWithin(res.body, 65_536).catch(() => null);
  if (text === null) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

/** The kernel's user namespace settings (null: the key does not exist here), and what the bubblewrap probe found. */
export interface UserNamespaceSettings {
  maxNs: number | null;
  debianClone: number | null;
  apparmor: number | null;
  root: boolean;
  bwrapWorks: boolean;
}

/**
 * Whether user namespaces let bubblewrap work. A setting that restricts them fails the check only
 * when bubblewrap does not work: Ubuntu's AppArmor restriction stays on with a profile that allows
 * bwrap, the fix this check suggests (review s22: it failed for ever after that fix). The fix
 * names only keys this kernel has: `sysctl -w` of one it lacks fails.
 */
export function userNamespaceCheck(settings: UserNamespaceSettings): DoctorCheck {
  const { maxNs, debianClone, apparmor, root, bwrapWorks } = settings;
  const restricted = maxNs === 0 || (!root && (debianClone === 0 || apparmor === 1));
  const detail = `max_user_namespaces=${maxNs ?? 'n/a'}, unprivileged_userns_clone=${debianClone ?? 'n/a'}, apparmor_restrict_unprivileged_userns=${apparmor ?? 'n/a'}`
    + (restricted && bwrapWorks ? ' (restricted, but bubblewrap is allowed them: its test sandbox ran)' : '')
    + (root ? ' (running as root: contained servers then run as the host\'s root, without capabilities, and pass every permission check on root-owned files they are granted; run the sidecar as an ordinary user where you can)' : '');
  if (!restricted || bwrapWorks) return { name: 'user namespaces', ok: true, detail };
  const keys = [...(maxNs === 0 ? ['user.max_user_namespaces=15000'] : []), ...(!root && debianClone === 0 ? ['kernel.unprivileged_userns_clone=1'] : [])];
  const apparmorFix = !root && apparmor === 1 ? 'allow bwrap user namespaces in AppArmor (a profile for /usr/bin/bwrap with "userns,"), or sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0' : undefined;
  const fix = [keys.length > 0 ? `sudo sysctl -w ${keys.join(' ')}` : undefined, apparmorFix].filter((f) => f !== undefined).join('; and ');
  return { name: 'user namespaces', ok: false, detail, fix: `Enable them: ${fix}` };
}

/** bubblewrap, user namespaces, slirp4netns, util-linux and nsenter: what a machine that launches servers needs. */
async function sandboxChecks(options: DoctorOptions): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  // The sidecar's own probe decides, so doctor and a contained launch never disagree.
  const bwrap = bubblewrapExecutable(options.bwrap);
  const availability = await bubblewrapProbe(bwrap)();
  const present = availability.available || availability.problem !== 'missing';
  const version = present ? await run(bwrap, ['--version']) : undefined;
  checks.push(
    present
      ? { name: 'bubblewrap present', ok: true, detail: version?.ok ? `${version.out} (${bwrap})` : bwrap }
      : { name: 'bubblewrap present', ok: false, detail: `"${bwrap}" not found`, fix: 'Install it: sudo apt-get install -y bubblewrap (Fedora: sudo dnf install bubblewrap)' },
  );
  if (process.platform === 'linux') {
    checks.push(userNamespaceCheck({
      maxNs: readNumber('/proc/sys/user/max_user_namespaces'),
      debianClone: readNumber('/proc/sys/kernel/unprivileged_userns_clone'),
      apparmor: readNumber('/proc/sys/kernel/apparmor_restrict_unprivileged_userns'),
      root: process.getuid?.() === 0,
      bwrapWorks: availability.available,
    }));
  }
  if (present) {
    checks.push(
      availability.available
        ? { name: 'bubblewrap usable', ok: true, detail: 'a test sandbox started and exited cleanly' }
        : { name: 'bubblewrap usable', ok: false, detail: availability.message, fix: 'Check the user namespace settings above; contained servers fail closed with containment-unavailable until this passes' },
    );
  }
  if (process.platform === 'linux') {
    // The same probe a contained launch under "internet-client" asks, so the two never disagree.
    const slirp = userModeNetworkExecutable(options.slirp4netns);
    const network = await userModeNetworkProbe(slirp)();
    const version = network.available ? await run(slirp, ['--version']) : undefined;
    checks.push(
      network.available
        ? { name: 'slirp4netns present', ok: true, detail: `${version?.ok ? version.out.split('\n')[0] : 'slirp4netns'} (${slirp}); "internet-client" sandboxes get user-mode networking` }
        : {
            name: 'slirp4netns present',
            ok: false,
            detail: network.message,
            fix: 'Install it: sudo apt-get install -y slirp4netns (Fedora: sudo dnf install slirp4netns); until then servers whose profile grants "internet-client" fail closed with containment-unavailable',
          },
    );
  }
  if (process.platform === 'linux') {
    // Found on PATH as the sidecar finds them (`composition.ts`), so the two never disagree.
    const env = options.env ?? process.env;
    const tools = { prlimit: findPrlimit(env), setpriv: findSetpriv(env) };
    const missing = Object.entries(tools).flatMap(([name, path]) => (path === null ? [name] : []));
    // Asked as the sidecar asks it, before its first ordinary launch: an old one refuses the option.
    const probe = tools.setpriv === null ? null : await takesParentDeathSignal(tools.setpriv);
    checks.push(
      missing.length > 0
        ? {
            name: 'util-linux present',
            ok: false,
            detail: `${missing.join(' and ')} not found on PATH`,
            fix: 'Install util-linux (sudo apt-get install -y util-linux); until then servers run without the memory limit, and an uncontained one may outlive a sidecar killed outright',
          }
        : probe !== null && !probe.ok
          ? {
              name: 'util-linux present',
              ok: false,
              detail: `${tools.setpriv} does not take --pdeathsig: ${probe.problem}`,
              fix: 'Install util-linux 2.33 or later; until then an uncontained server may outlive a sidecar killed outright (the sidecar runs servers without setpriv)',
            }
          : { name: 'util-linux present', ok: true, detail: `${tools.prlimit} caps each server's memory; ${tools.setpriv} makes an uncontained server end with a sidecar killed outright` },
    );
  }
  if (process.platform === 'linux') {
    // Asked of where doctor runs: a sidecar under its systemd unit (Delegate=yes) may have what a terminal lacks.
    const cgroups = cgroupReadiness(options.cgroups);
    checks.push(
      cgroups.ok
        ? { name: 'server cgroups', ok: true, detail: `each server's process tree gets a cgroup under ${cgroups.dir}${cgroups.v2 ? ' (the sidecar first moves into a leaf of its own cgroup, when it is alone there)' : ''}: ${heldLimits(cgroups)}, and what leaves a server's process group ends with it` }
        : { name: 'server cgroups', ok: false, informational: true, detail: `${cgroups.problem}; servers run without a task limit (limits.tasks-per-server, limits.tasks-per-agent)`, fix: CGROUP_FIX },
    );
  }
  if (process.platform === 'linux' && !(options.root ?? process.getuid?.() === 0)) {
    const nsenter = options.nsenter ?? NSENTER;
    checks.push(
      existsSync(nsenter)
        ? { name: 'nsenter present', ok: true, detail: `${nsenter}; a sidecar that is not root starts slirp4netns inside the sandbox's user namespace with it` }
        : { name: 'nsenter present', ok: false, detail: `"${nsenter}" not found`, fix: 'Install util-linux (sudo apt-get install -y util-linux); until then servers whose profile grants "internet-client" fail closed with containment-unavailable' },
    );
  }
  return checks;
}

export function formatDoctor(checks: readonly DoctorCheck[]): string {
  return checks
    .map((c) => `${c.ok ? 'ok  ' : c.informational === true ? 'info' : 'FAIL'} ${c.name}: ${c.detail}${!c.ok && c.fix ? `\n     → ${c.fix}` : ''}`)
    .join('\n');
}

/** What holds of the limits of each server's tree, and each agent's, where the sidecar may make cgroups: the task limits always, memory and CPU where their controllers are. */
function heldLimits(cgroups: { memory: boolean; cpu: boolean }): string {
  const held = ['limits.tasks-per-server', 'limits.tasks-per-agent', ...(cgroups.memory ? ['limits.memory-per-server-mib', 'limits.memory-per-agent-mib'] : []), ...(cgroups.cpu ? ['limits.cpus-per-server (with a fair CPU share)'] : [])];
  const missing = [...(cgroups.memory ? [] : ['memory-per-server-mib nor memory-per-agent-mib (no memory controller here)']), ...(cgroups.cpu ? [] : ['cpus-per-server (no cpu controller here)'])];
  const joined = held.length === 1 ? held[0]! : `${held.slice(0, -1).join(', ')} and ${held.at(-1)!}`;
  return `${joined} ${held.length === 1 ? 'holds' : 'hold'}${missing.length > 0 ? `; not ${missing.join(', nor ')}` : ''}`;
}
