import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, closeSync, constants, mkdirSync, openSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentEntry, hostCredential, type SidecarDirSpec, workerHostEntry, writeSidecarDir } from '../test/support/configs.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { createHostKey } from '../sidecar/link/host-key.ts';
import { fdListingStandIn, standInRuns, STRAYS, strayStdio } from '../test/support/descriptors.ts';
import { freePort, isAlive, ProcessSet } from '../test/support/processes.ts';
import { oldSetpriv } from '../test/support/old-setpriv.ts';
import { startWorkerProcess, type WorkerProcess } from '../test/support/worker-process.ts';
import { bubblewrapProbe } from '../sidecar/sandbox/index.ts';
import { doctorPassed, formatDoctor, runDoctor } from './doctor.ts';
import { runWorkstationDoctor } from './doctor-workstation.ts';
import { sudoLaunchRefusal } from './doctor-command.ts';
import { builtCli, removeBuiltCli } from '../test/support/built-cli.ts';

// Bundled once: each command from source cost 1.3 s of tsx transforms, 80 s for the file in a loaded run (s25).
const cli = () => builtCli();
afterAll(() => removeBuiltCli());
// Its real path, as the README asks of a contained server's config (a symlinked install dir is refused).
const FILESYSTEM = realpathSync(join(import.meta.dirname, '..', 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js'));
const HANG = join(import.meta.dirname, '..', 'test', 'fixtures', 'hang-server.mjs');
const TREE_HANG = join(import.meta.dirname, '..', 'test', 'fixtures', 'tree-hang-server.mjs');
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('switchyard doctor', () => {
  it('passes on this machine: bubblewrap present and usable, Deno found', async () => {
    const checks = await runDoctor();
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(byName['bubblewrap present']?.ok).toBe(true);
    expect(byName['bubblewrap usable']?.ok).toBe(true);
    expect(byName['slirp4netns present']).toMatchObject({ ok: true, detail: expect.stringMatching(/^slirp4netns version \d+\.\d+/) });
    expect(byName['deno found']?.detail).toMatch(/^deno \d+\.\d+/);
    // A sidecar run as root hands its servers root's uid: doctor says so where it reports the user namespaces.
    const asRoot = process.getuid?.() === 0;
    expect(byName['user namespaces']?.detail.includes('run the sidecar as an ordinary user')).toBe(asRoot);
  });

  it('names the slirp4netns package when it is missing, the check a contained internet-client launch makes', async () => {
    const checks = await runDoctor({ slirp4netns: '/nonexistent/slirp4netns', deno: false });
    const network = checks.find((c) => c.name === 'slirp4netns present');
    expect(network).toMatchObject({ ok: false, detail: expect.stringContaining('slirp4netns, which is not installed') });
    expect(formatDoctor(checks)).toContain('→ Install it: sudo apt-get install -y slirp4netns');
  });

  it('says whether the sidecar could give each server a cgroup, and only informs where it could not', async () => {
    const here = (await runDoctor({ deno: false })).find((c) => c.name === 'server cgroups');
    // As root (CI), with this host's v1 pids hierarchy or a v2 one.
    if (process.getuid?.() === 0) expect(here).toMatchObject({ ok: true, detail: expect.stringMatching(/^each server's process tree gets a cgroup under \/sys\/fs\/cgroup.*limits\.tasks-per-server, limits\.tasks-per-agent, limits\.memory-per-server-mib(, | and )limits\.memory-per-agent-mib( and limits\.cpus-per-server \(with a fair CPU share\))? hold/) });
    // Where only the pids controller is: what does not hold is named.
    const pidsOnly = mkdtempSync(join(tmpdir(), 'doctor-cgroups-'));
    try {
      const only = (await runDoctor({ deno: false, cgroups: { pidsV1: pidsOnly } })).find((c) => c.name === 'server cgroups');
      expect(only).toMatchObject({ ok: true, detail: `each server's process tree gets a cgroup under ${pidsOnly}: limits.tasks-per-server and limits.tasks-per-agent hold; not memory-per-server-mib nor memory-per-agent-mib (no memory controller here), nor cpus-per-server (no cpu controller here), and what leaves a server's process group ends with it` });
    } finally {
      rmSync(pidsOnly, { recursive: true, force: true });
    }
    const checks = await runDoctor({ deno: false, cgroups: {} });
    expect(checks.find((c) => c.name === 'server cgroups')).toEqual({
      name: 'server cgroups',
      ok: false,
      informational: true,
      detail: 'no cgroup hierarchy is mounted where this process can see it; servers run without a task limit (limits.tasks-per-server, limits.tasks-per-agent)',
      fix: 'Run the sidecar as a systemd unit of its own with Delegate=yes whose ExecStart runs node itself, not through npx or a script that does not exec it (README, "Run the sidecar as a systemd user unit"), or as root',
    });
    expect(formatDoctor(checks)).toContain('server cgroups: no cgroup hierarchy is mounted');
  });

  it('checks the util-linux tools the sidecar runs each server through, found on PATH as the sidecar finds them', async () => {
    const found = (await runDoctor({ deno: false })).find((c) => c.name === 'util-linux present');
    expect(found).toMatchObject({ ok: true, detail: expect.stringMatching(/\/prlimit caps each server's memory; .*\/setpriv makes an uncontained server end with a sidecar killed outright/) });
    const checks = await runDoctor({ deno: false, env: { PATH: '/nonexistent' } });
    expect(checks.find((c) => c.name === 'util-linux present')).toMatchObject({ ok: false, detail: 'prlimit and setpriv not found on PATH' });
    expect(formatDoctor(checks)).toContain('→ Install util-linux (sudo apt-get install -y util-linux)');
    const dir = mkdtempSync(join(tmpdir(), 'doctor-setpriv-'));
    try {
      oldSetpriv(dir);
      const withOld = (await runDoctor({ deno: false, env: { PATH: `${dir}:/usr/bin:/bin` } })).find((c) => c.name === 'util-linux present');
      expect(withOld).toMatchObject({ ok: false, detail: `${dir}/setpriv does not take --pdeathsig: ${dir}/setpriv exited with code 1: setpriv: unrecognized option '--pdeathsig'` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('checks nsenter only for a sidecar that is not root, which starts slirp4netns with it', async () => {
    const asUser = await runDoctor({ root: false, deno: false });
    expect(asUser.find((c) => c.name === 'nsenter present')).toMatchObject({ ok: true, detail: expect.stringContaining('/usr/bin/nsenter') });
    const missing = await runDoctor({ root: false, nsenter: '/nonexistent/nsenter', deno: false });
    expect(missing.find((c) => c.name === 'nsenter present')).toMatchObject({ ok: false, detail: '"/nonexistent/nsenter" not found' });
    expect(formatDoctor(missing)).toContain('→ Install util-linux');
    const asRoot = await runDoctor({ root: true, nsenter: '/nonexistent/nsenter', deno: false });
    expect(asRoot.some((c) => c.name === 'nsenter present')).toBe(false);
  });

  it('says how to install bubblewrap when it is missing', async () => {
    const checks = await runDoctor({ bwrap: '/nonexistent/bwrap' });
    const present = checks.find((c) => c.name === 'bubblewrap present');
    expect(present?.ok).toBe(false);
    expect(formatDoctor(checks)).toContain('→ Install it: sudo apt-get install -y bubblewrap');
    expect(checks.some((c) => c.name === 'bubblewrap usable')).toBe(false);
  });

  it('gives the sidecar probe\'s verdict when bubblewrap is installed but cannot sandbox', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-doctor-'));
    try {
      const fake = join(dir, 'bwrap');
      writeFileSync(fake, '#!/bin/sh\n[ "$1" = --version ] && { echo "bubblewrap 0.0-fake"; exit 0; }\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
      chmodSync(fake, 0o755);
      const checks = await runDoctor({ bwrap: fake });
      const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
      expect(byName['bubblewrap present']).toMatchObject({ ok: true, detail: `bubblewrap 0.0-fake (${fake})` });
      const probed = await bubblewrapProbe(fake)();
      expect(probed.available).toBe(false);
      expect(byName['bubblewrap usable']).toMatchObject({ ok: false, detail: probed.available ? '' : probed.message });
      expect(byName['bubblewrap usable']?.detail).toContain('No permissions to create new namespace');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs its probes and version checks with none of the descriptors it inherited', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-doctor-fds-'));
    try {
      const bwrap = fdListingStandIn(dir, 'bwrap', 'bubblewrap 0.0-stand-in');
      const slirp = fdListingStandIn(dir, 'slirp4netns', 'slirp4netns version 1.2.0');
      const deno = fdListingStandIn(dir, 'deno', 'deno 0.0.0-stand-in');
      const child = spawn(process.execPath, [await cli(), 'doctor'], { stdio: strayStdio(), env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, SWITCHYARD_DENO: deno } });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      await new Promise((resolve) => child.once('close', resolve));
      expect(stdout, stderr).toContain(`ok   bubblewrap present: bubblewrap 0.0-stand-in (${bwrap})`);
      expect(stdout).toContain(`ok   slirp4netns present: slirp4netns version 1.2.0 (${slirp})`);
      expect(stdout).toContain('ok   deno found: deno 0.0.0-stand-in');
      // The probes ran each tool, and so did each `--version`: every run held /dev/null where doctor held a stray pipe.
      for (const [tool, runs] of [bwrap, slirp, deno].map((file) => [file, standInRuns(file)] as const)) {
        expect(runs.length, tool).toBeGreaterThan(0);
        for (const fds of runs) for (const fd of STRAYS) expect(fds[fd], `${tool}: fd ${fd}`).toBe('/dev/null');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('checks that the worker answers, and says what to do when it does not', async () => {
    const server = createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const up = (await runDoctor({ worker: `http://127.0.0.1:${port}` })).find((c) => c.name === 'worker reachable');
    expect(up).toMatchObject({ ok: true });
    await new Promise((r) => server.close(r));
    const down = (await runDoctor({ worker: `http://127.0.0.1:${port}` })).find((c) => c.name === 'worker reachable');
    expect(down?.ok).toBe(false);
    expect(down?.detail).toBe(`http://127.0.0.1:${port}/healthz: fetch failed (ECONNREFUSED)`);
    expect(down?.fix).toBe(`Check that the worker runs and listens at http://127.0.0.1:${port} (--worker): on its machine, switchyard worker --config FILE; or fix the URL given to --worker`);
    // Something else at the address: a 404 is no worker (review s19: any answer below 500 passed).
    const other = createServer((_req, res) => ((res.statusCode = 404), res.end('not here')));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherPort = (other.address() as { port: number }).port;
    const wrong = (await runDoctor({ worker: `http://127.0.0.1:${otherPort}` })).find((c) => c.name === 'worker reachable');
    await new Promise((r) => other.close(r));
    expect(wrong).toMatchObject({ ok: false, detail: `http://127.0.0.1:${otherPort}/healthz answered 404`, fix: expect.stringContaining('but not a Switchyard worker') });
    const typo = (await runDoctor({ worker: 'yard.example.com' })).find((c) => c.name === 'worker reachable');
    expect(typo).toMatchObject({ ok: false, detail: '"yard.example.com" is not an absolute URL' });
  });

  it('takes no 200 page for a worker, and passes on a worker\'s own refusal (review s22)', async () => {
    const answers: Array<[number, string]> = [[200, '<html>a web server</html>'], [403, '{"error":{"reason":"invalid-request","message":"Host \\"192.0.2.2:8787\\" is not allowed: add it to \\"allowed-hosts\\""}}']];
    const server = createServer((_req, res) => {
      const [status, body] = answers.shift()!;
      res.statusCode = status;
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const page = (await runDoctor({ worker: `http://127.0.0.1:${port}` })).find((c) => c.name === 'worker reachable');
      expect(page).toMatchObject({ ok: false, detail: `http://127.0.0.1:${port}/healthz answered 200, not a Switchyard worker's {"ok":true}`, fix: expect.stringContaining('but not a Switchyard worker') });
      const refused = (await runDoctor({ worker: `http://127.0.0.1:${port}` })).find((c) => c.name === 'worker reachable');
      expect(refused).toMatchObject({ ok: false, detail: `http://127.0.0.1:${port}/healthz answered 403: Host "192.0.2.2:8787" is not allowed: add it to "allowed-hosts"`, fix: `The worker at http://127.0.0.1:${port} refused this request: see why above` });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('switchyard doctor --config-dir: a sidecar.json that cannot be read', () => {
  const root = mkdtempSync(join(tmpdir(), 'sy-doctor-unreadable-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('reports a missing one as only that, with the sidecar init line that writes it; switchyard sidecar says the same', async () => {
    const dir = join(root, 'nope');
    const checks = await runWorkstationDoctor(dir);
    expect(formatDoctor(checks)).toBe(
      `FAIL sidecar.json: ${join(dir, 'sidecar.json')}: not found\n     → Set up this workstation: switchyard sidecar init --config-dir ${dir} --worker URL --entity-id ID`,
    );
    const sidecar = await promisify(execFile)(process.execPath, [await cli(), 'sidecar', '--config-dir', dir], { env: { ...process.env } }).catch((e: { stderr: string }) => e);
    expect(sidecar.stderr).toBe(`switchyard: ${join(dir, 'sidecar.json')}: not found: set up this workstation with switchyard sidecar init --config-dir ${dir} --worker URL --entity-id ID\n`);
  });

  it('takes the dir from SWITCHYARD_CONFIG_DIR, as the sidecar\'s own commands do (review s23: it ran only the tool checks)', async () => {
    const dir = join(root, 'from-env');
    const result = await promisify(execFile)(process.execPath, [await cli(), 'doctor'], { env: { ...process.env, SWITCHYARD_CONFIG_DIR: dir } }).catch((e: { stdout: string }) => e);
    expect(result.stdout).toContain(`FAIL sidecar.json: ${join(dir, 'sidecar.json')}: not found`);
  });

  it('says a folder in its place is not a file', async () => {
    const dir = join(root, 'folder');
    mkdirSync(join(dir, 'sidecar.json'), { recursive: true });
    const [check] = await runWorkstationDoctor(dir);
    expect(check).toMatchObject({ ok: false, detail: `${join(dir, 'sidecar.json')}: not a file`, fix: expect.stringContaining(`switchyard sidecar init --config-dir ${dir} --worker URL --entity-id ID`) });
  });

  it('quotes a config dir with a space in the init line it suggests, so the line runs as printed', async () => {
    const dir = join(root, 'my configs');
    mkdirSync(dir, { recursive: true });
    const [check] = await runWorkstationDoctor(dir);
    expect(check!.fix).toContain(`switchyard sidecar init --config-dir '${dir}' --worker URL --entity-id ID`);
  });

  it('gives a missing host key the sidecar init line in full, with this host\'s worker and entity id', async () => {
    const dir = join(root, 'keyless');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' }));
    const key = (await runWorkstationDoctor(dir)).find((c) => c.name === 'host key');
    expect(key?.fix).toBe(`Run switchyard sidecar init --config-dir ${dir} --worker http://127.0.0.1:8787 --entity-id laptop to write one, then run the host add line it prints on the worker's machine`);
  });

  it('fails contained launches for a key-file every sandbox would show (review s24: under /usr, a contained server could read it)', async () => {
    const dir = join(root, 'key-under-usr');
    mkdirSync(dir, { recursive: true });
    const keyFile = '/usr/share/switchyard-review-s24/host.key';
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop', 'key-file': keyFile }));
    const check = (await runWorkstationDoctor(dir)).find((c) => c.name === 'contained launches');
    expect(check).toEqual({
      name: 'contained launches',
      ok: false,
      detail: `the host key file (key-file: ${keyFile}) lies in "/usr", which every sandbox shows read-only: every contained launch is refused (launch-failed); move the key file out of those folders`,
      fix: 'Keep the config dir, key-file and audit.file out of /usr, /bin, /sbin, /lib* and the parts of /etc a sandbox shows',
    });
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' }));
    const checks = await runWorkstationDoctor(dir);
    expect(checks.map((c) => c.name)).toContain('host key');
    expect(checks.map((c) => c.name)).not.toContain('contained launches');
  });

  it('fixes a host key other users may read with chmod, not with a new identity the worker would refuse', async () => {
    const dir = join(root, 'loose-key');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' }));
    await createHostKey(join(dir, 'host.key'));
    chmodSync(join(dir, 'host.key'), 0o644);
    const key = (await runWorkstationDoctor(dir)).find((c) => c.name === 'host key');
    expect(key).toMatchObject({ ok: false, detail: expect.stringContaining('readable by other users'), fix: `Run chmod 600 ${join(dir, 'host.key')}: the key stays the host's identity` });
  });
});

/** Runs the bin's `doctor --config-dir` on a freshly written DIR; a check's line (and its fix line) by name. */
async function doctorOn(dir: string, spec: SidecarDirSpec, args: string[] = []): Promise<{ code: number; stdout: string; line: (check: string) => string }> {
  writeSidecarDir(dir, spec);
  let result: { code: number; stdout: string };
  try {
    result = { code: 0, stdout: (await promisify(execFile)(process.execPath, [await cli(), 'doctor', '--config-dir', dir, ...args], { env: { ...process.env } })).stdout };
  } catch (error) {
    const e = error as { code: number; stdout: string };
    result = { code: e.code, stdout: e.stdout };
  }
  const line = (check: string) => {
    const lines = result.stdout.split('\n');
    const at = lines.findIndex((l) => l.slice(5).startsWith(`${check}: `));
    return at === -1 ? '' : [lines[at], ...(lines[at + 1]?.startsWith('     → ') ? [lines[at + 1]] : [])].join('\n');
  };
  return { ...result, line };
}

describe('switchyard doctor --config-dir: a workstation, checked deep against a real worker', () => {
  const procs = new ProcessSet();
  const root = mkdtempSync(join(tmpdir(), 'sy-doctor-deep-'));
  const known = hostCredential('laptop');
  let worker: WorkerProcess;

  beforeAll(async () => {
    worker = await startWorkerProcess(procs, { agents: [], hosts: [workerHostEntry(known)], servers: {} }, { logLevel: 'warn' });
  }, 60_000);
  afterAll(async () => {
    await procs.stopAll();
    rmSync(root, { recursive: true, force: true });
  });

  const doctor = (name: string, spec: Partial<SidecarDirSpec> = {}) => doctorOn(join(root, name), { worker: worker.url, host: known, servers: { echo: { command: process.execPath, args: ['-e', ''] } }, ...spec });

  it('passes a good dir: sidecar.json, the host key, the link handshake, profiles and server commands, with no Deno check', async () => {
    const { stdout, line } = await doctor('good', { profiles: { floor: { 'network-capabilities': [] } }, sidecar: { 'trust-profile': 'floor' } });
    expect(line('sidecar.json')).toMatch(/^ok {3}sidecar\.json: worker http:\/\/127\.0\.0\.1:\d+, entity "laptop"$/);
    expect(line('host key')).toContain(known.publicKey);
    expect(line('link to the worker')).toMatch(/^ok {3}link to the worker: ws:\/\/127\.0\.0\.1:\d+\/link accepted host "laptop" and its key$/);
    expect(line('trust profile "floor"')).toMatch(/^ok {3}trust profile "floor": sha256:[0-9a-f]{64}$/);
    expect(line('server "echo"')).toBe(`ok   server "echo": command "${process.execPath}" is ${process.execPath}`);
    expect(stdout).not.toContain('deno');
  });

  it('catches a wrong host key, with the worker\'s fix', async () => {
    const { code, line } = await doctor('wrong-key', { host: { ...hostCredential('laptop') } });
    expect(code).toBe(1);
    expect(line('link to the worker')).toMatch(/^FAIL link to the worker: the worker at ws:\/\/.* refused host "laptop": The worker does not know this host's key \(entity "laptop"\): if this host made a new key, give the worker config the line `sidecar host-entry` prints on it \(switchyard host add --rekey\)\n/);
  });

  it('catches an entity id the worker does not know, naming it and the fix', async () => {
    const { code, line } = await doctor('unknown-id', { host: { ...known, entityId: 'desk' } });
    expect(code).toBe(1);
    expect(line('link to the worker')).toContain('refused host "desk": The worker does not know host "desk": add this host to the worker config with the line `sidecar host-entry` prints on that host (switchyard host add)');
  });

  it('catches a server whose command is not on PATH, naming the server and the command', async () => {
    const { code, line } = await doctor('missing-command', { servers: { files: { command: 'no-such-mcp-server-command' } } });
    expect(code).toBe(1);
    expect(line('server "files"')).toMatch(/^FAIL server "files": command "no-such-mcp-server-command" not found: .*\n {5}→ Install it on this machine, or set "command" of "files" in .*mcp-servers\/mcp\.json to its absolute path$/);
  });

  it('fails an mcp.json whose server name holds "__", which the worker could never route to', async () => {
    const { code, line } = await doctor('namespace', { servers: { a__b: { command: process.execPath, args: ['-e', ''] } } });
    expect(code).toBe(1);
    expect(line('server "a__b"')).toBe('');
    expect(line(`servers in ${join(root, 'namespace', 'mcp-servers', 'mcp.json')}`)).toMatch(/^FAIL servers in .*: Invalid mcp\.json: mcpServers\.a__b: server names must not contain "__" nor end in "_": \/mcp joins the server and tool names with "__" and reads the server back up to the first one\n {5}→ Fix it: switchyard check /);
  });

  it('catches an unreachable worker, naming the URL and what to check', async () => {
    const port = await freePort();
    const { code, line } = await doctor('unreachable', { worker: `http://127.0.0.1:${port}` });
    expect(code).toBe(1);
    expect(line('link to the worker')).toMatch(new RegExp(`^FAIL link to the worker: cannot reach the worker at ws://127\\.0\\.0\\.1:${port}/link: .*\\n {5}→ Check that the worker runs and listens at http://127\\.0\\.0\\.1:${port} \\("worker" in .*sidecar\\.json\\)`));
  });

  it('probes the worker --worker names instead of sidecar.json\'s, as the sidecar dials it with --worker', async () => {
    const elsewhere = `http://127.0.0.1:${await freePort()}`;
    const { code, line } = await doctorOn(join(root, 'given-worker'), { worker: elsewhere, host: known, servers: { echo: { command: process.execPath, args: ['-e', ''] } } }, ['--worker', worker.url]);
    expect(line('sidecar.json')).toBe(`ok   sidecar.json: worker ${worker.url} (--worker), entity "laptop"`);
    expect(line('link to the worker')).toBe(`ok   link to the worker: ${worker.url.replace(/^http/, 'ws')}/link accepted host "laptop" and its key`);
    expect(line('worker reachable')).toMatch(/^ok {3}worker reachable: /);
    expect(code).toBe(0);

    const gone = await doctorOn(join(root, 'given-worker-gone'), { worker: worker.url, host: known, servers: {} }, ['--worker', elsewhere]);
    expect(gone.line('link to the worker')).toMatch(/→ Check that the worker runs and listens at http:\/\/127\.0\.0\.1:\d+ \(--worker\) and/);
  });

  it('catches a floor that does not exist and a profile whose base is missing', async () => {
    const { code, line } = await doctor('profiles', { profiles: { child: { 'base-trust-profiles': ['gone'] } }, sidecar: { 'trust-profile': 'floor' } });
    expect(code).toBe(1);
    expect(line('trust profile "child"')).toContain('Trust profile not found: "gone", a base of "child"');
    expect(line('trust profile "floor"')).toContain('trust-profiles/floor.json does not exist');
  });

  it('reports a broken sidecar.json with check\'s report and stops there', async () => {
    const dir = join(root, 'broken');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'not a url' }));
    const { stdout } = await promisify(execFile)(process.execPath, [await cli(), 'doctor', '--config-dir', dir], { env: { ...process.env } }).catch((e: { stdout: string }) => e);
    expect(stdout).toContain(`FAIL sidecar.json: ${join(dir, 'sidecar.json')}: 2 problems (sidecar config)\n  worker: must be an absolute URL\n  entity-id: is required`);
    expect(stdout).not.toContain('link to the worker');
  });
});

describe('switchyard doctor --config-dir: what the worker expects of this host, told to the probe', () => {
  const procs = new ProcessSet();
  const root = mkdtempSync(join(tmpdir(), 'sy-doctor-expects-'));
  const host = hostCredential('laptop');
  const profiles = { workspace: { 'network-capabilities': [] }, other: { 'network-capabilities': ['loopback'] } };
  const stale = `sha256:${'0'.repeat(64)}`;
  let worker: WorkerProcess;
  let current: Record<string, string>;

  beforeAll(async () => {
    // The revisions as this host computes them, from the same files the doctor reads.
    const scratch = join(root, 'scratch');
    writeSidecarDir(scratch, { worker: 'http://127.0.0.1:1', host, profiles });
    const store = new TrustProfileStore(join(scratch, 'trust-profiles'));
    current = { workspace: (await store.load('workspace')).revision, other: (await store.load('other')).revision };
    const local = { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } };
    const trust = (ref: string, revision: string) => ({ 'trust-profile-ref': ref, 'trust-profile-revision': revision });
    worker = await startWorkerProcess(
      procs,
      {
        agents: [
          { ...agentEntry({ name: 'alice', token: 'alice-token', servers: ['echo'] }), 'trust-context': trust('workspace', stale) },
          { ...agentEntry({ name: 'bob', token: 'bob-token', servers: ['echo'] }), 'trust-context': trust('other', current.other!) },
          { ...agentEntry({ name: 'carol', token: 'carol-token', servers: ['ghost'] }), 'trust-context': trust('absent', stale) },
          // Uses no server of this host: not this host's concern.
          { ...agentEntry({ name: 'dave', token: 'dave-token', servers: ['remote'] }), 'trust-context': trust('workspace', stale) },
        ],
        hosts: [workerHostEntry(host)],
        servers: { echo: local, ghost: local, remote: { executor: { type: 'http', url: 'https://203.0.113.7/mcp' } } },
      },
      { logLevel: 'warn' },
    );
  }, 60_000);
  afterAll(async () => {
    await procs.stopAll();
    rmSync(root, { recursive: true, force: true });
  });

  it('fails a stale pin with both revisions, the agents it refuses and the host add line that pins it', async () => {
    const { code, line } = await doctorOn(join(root, 'ws'), { worker: worker.url, host, profiles, servers: { echo: { command: process.execPath, args: ['-e', ''] } } });
    expect(code).toBe(1);
    const check = line('worker\'s pin of trust profile "workspace"');
    expect(check).toContain(`FAIL worker's pin of trust profile "workspace": agent "alice" pins ${stale}, but this host has ${current.workspace}: they are refused (trust-profile-stale)`);
    expect(check).not.toContain('dave');
    const fix = /→ If the profile is as it should be, pin it: on the worker's machine run npx --no switchyard-mcp host add --config worker\.json '(.*)'$/.exec(check);
    expect(JSON.parse(fix?.[1] ?? 'null')).toEqual({ 'entity-id': 'laptop', 'public-key': host.publicKey, servers: ['echo'], 'trust-profiles': current });
    expect(line('worker\'s pin of trust profile "other"')).toBe(`ok   worker's pin of trust profile "other": ${current.other}, as agent "bob" pins it`);
  });

  it('fails a server the worker routes here that no mcp.json layer defines, and a profile this host lacks', async () => {
    const { line } = await doctorOn(join(root, 'ws2'), { worker: worker.url, host, profiles, servers: { echo: { command: process.execPath, args: ['-e', ''] } } });
    expect(line('worker\'s server "echo"')).toMatch(/^ok {3}worker's server "echo": routed to this host and defined in .*mcp-servers\/mcp\.json$/);
    expect(line('worker\'s server "ghost"')).toMatch(
      /^FAIL worker's server "ghost": the worker routes "ghost" to this host, but no mcp\.json layer here defines it: agents get server-not-found\n {5}→ Add "ghost" to .*mcp-servers\/mcp\.json, or bind it to the host that runs it in the worker config$/,
    );
    expect(line('worker\'s pin of trust profile "absent"')).toMatch(/^FAIL worker's pin of trust profile "absent": agent "carol" names it, but this host cannot use it: .*: they get trust-profile-not-found\n {5}→ Add .*trust-profiles\/absent\.json/);
  });
});

describe('switchyard doctor --config-dir: an agent without a trust profile, on a host as sidecar init writes it', () => {
  const procs = new ProcessSet();
  const root = mkdtempSync(join(tmpdir(), 'sy-doctor-unprofiled-'));
  const host = hostCredential('laptop');
  let worker: WorkerProcess;

  beforeAll(async () => {
    // switchyard agent add bob --servers mem, with no --trust-profile.
    const agents = [agentEntry({ name: 'bob', token: 'bob-token', servers: ['mem'] })];
    worker = await startWorkerProcess(procs, { agents, hosts: [workerHostEntry(host)], servers: { mem: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } } } }, { logLevel: 'warn' });
  }, 60_000);
  afterAll(async () => {
    await procs.stopAll();
    rmSync(root, { recursive: true, force: true });
  });

  it('fails the server every call to which is refused, with the fix, and passes it once the host allows it', async () => {
    const servers = { mem: { command: process.execPath, args: ['-e', ''] } };
    const refused = await doctorOn(join(root, 'no-floor'), { worker: worker.url, host, servers, sidecar: { 'allow-uncontained': false } });
    expect(refused.code).toBe(1);
    expect(refused.line('worker\'s server "mem"')).toMatch(
      /^FAIL worker's server "mem": the worker routes "mem" to this host, but no agent that uses this host's servers names a trust profile, and this host has no trust floor and no "allow-uncontained": every call to it is refused \(denied-by-policy\)\n {5}→ Give those agents a "trust-context" in the worker config/,
    );
    const allowed = await doctorOn(join(root, 'allowed'), { worker: worker.url, host, servers });
    expect(allowed.line('worker\'s server "mem"')).toMatch(/^ok {3}worker's server "mem": routed to this host and defined in .*mcp\.json$/);
  });
});

describe('switchyard doctor on the worker\'s machine (no --config-dir): Node 20+, nothing else', () => {
  const doctorHere = async (...args: string[]) => {
    // No bwrap, slirp4netns, prlimit, setpriv or nsenter on this PATH: a worker's machine as the README describes it.
    const env = { ...process.env, PATH: '/nonexistent' };
    return promisify(execFile)(process.execPath, [await cli(), 'doctor', ...args], { env }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
    );
  };

  it('reports the sandbox tools as information, not failures, and passes with the worker up', async () => {
    const server = createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      // None of them here, as on a worker's machine the README describes (bwrap itself cannot be hidden from the CLI: /usr/bin/bwrap is its fallback).
      const missing = { bwrap: '/nonexistent/bwrap', slirp4netns: '/nonexistent/slirp4netns', nsenter: '/nonexistent/nsenter', root: false, env: { PATH: '/nonexistent' } };
      const checks = await runDoctor({ ...missing, worker: url, deno: false, sandbox: 'informational' });
      const report = formatDoctor(checks);
      expect(report).toMatch(/^info bubblewrap present: "\/nonexistent\/bwrap" not found; needed only on a machine that runs servers: a workstation, or this one under worker --runtime node\n/m);
      for (const name of ['user namespaces', 'slirp4netns present', 'util-linux present', 'nsenter present']) expect(checks.find((c) => c.name === name)?.informational ?? true, name).toBe(true);
      expect(report).not.toContain('FAIL');
      expect(report).toMatch(/^ok {3}worker reachable: /m);
      expect(doctorPassed(checks)).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('words the fix for an unreachable --worker for that URL, not for a sidecar.json this machine does not have', async () => {
    const port = await freePort();
    const { code, stdout } = await doctorHere('--worker', `http://127.0.0.1:${port}`);
    expect(code).toBe(1);
    expect(stdout).toContain(`FAIL worker reachable: http://127.0.0.1:${port}/healthz: fetch failed (ECONNREFUSED)\n     → Check that the worker runs and listens at http://127.0.0.1:${port} (--worker): on its machine, switchyard worker --config FILE; or fix the URL given to --worker`);
    expect(stdout).not.toContain('sidecar.json');
  });

  it('still fails them on a workstation, which needs them', async () => {
    const checks = await runDoctor({ bwrap: '/nonexistent/bwrap', deno: false });
    expect(checks.find((c) => c.name === 'bubblewrap present')).toMatchObject({ ok: false });
    expect(formatDoctor(checks)).toMatch(/^FAIL bubblewrap present: /m);
    expect(doctorPassed(checks)).toBe(false);
  });
});

describe('switchyard doctor --config-dir: a floor whose grants contain the config dir', () => {
  it('notes on the floor\'s line that a launch under it alone is refused', async () => {
    const home = mkdtempSync(join(tmpdir(), 'sy-doctor-floor-'));
    try {
      const dir = join(home, '.config', 'switchyard');
      writeSidecarDir(dir, {
        worker: `http://127.0.0.1:${await freePort()}`,
        host: hostCredential('laptop'),
        servers: { echo: { command: process.execPath, args: ['-e', ''] } },
        profiles: { home: { 'filesystem-paths': [{ 'source-path': home, 'access-mode': 'read-only' }], 'network-capabilities': [] } },
        sidecar: { 'trust-profile': 'home' },
      });
      const checks = await runWorkstationDoctor(dir, { linkTimeoutMs: 2000 });
      expect(checks.find((c) => c.name === 'trust profile "home"')).toMatchObject({
        ok: true,
        detail: expect.stringMatching(new RegExp(`^sha256:[0-9a-f]{64}; this host's floor: it grants "${home}", which contains the sidecar config dir \\(${dir}, which holds the host key\\), and an agent that names no trust profile runs under this floor alone and is refused \\(launch-failed\\)`)),
      });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

/** The pids of live processes whose command line holds `text`: what a run left behind. */
function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(join('/proc', entry, 'cmdline'), 'utf8').includes(text) && isAlive(Number(entry))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('switchyard doctor --config-dir DIR --launch: each server started as the sidecar starts it, under each profile it runs under', () => {
  const procs = new ProcessSet();
  const root = mkdtempSync(join(tmpdir(), 'sy-doctor-launch-'));
  const host = hostCredential('laptop');
  // The README's workstation: a server-filesystem rooted at a project folder of the user's home.
  const project = join(root, 'home', 'project');
  const elsewhere = join(root, 'home', 'notes');
  const profiles = {
    // As the user narrowed it: it no longer grants the project, the server's root.
    narrow: { 'filesystem-paths': [{ 'source-path': elsewhere, 'access-mode': 'read-write' }], 'network-capabilities': [] },
    workspace: { 'filesystem-paths': [{ 'source-path': project, 'access-mode': 'read-write' }], 'network-capabilities': [] },
  };
  const servers = { files: { command: process.execPath, args: [FILESYSTEM, project] } };
  let worker: WorkerProcess;

  beforeAll(async () => {
    mkdirSync(project, { recursive: true });
    mkdirSync(elsewhere, { recursive: true });
    const scratch = join(root, 'scratch');
    writeSidecarDir(scratch, { worker: 'http://127.0.0.1:1', host, profiles });
    const store = new TrustProfileStore(join(scratch, 'trust-profiles'));
    const pin = async (ref: string) => ({ 'trust-profile-ref': ref, 'trust-profile-revision': (await store.load(ref)).revision });
    // Both pins current: doctor without --launch passes this host.
    worker = await startWorkerProcess(
      procs,
      {
        agents: [
          { ...agentEntry({ name: 'alice', token: 'alice-token', servers: ['files'] }), 'trust-context': await pin('narrow') },
          { ...agentEntry({ name: 'bob', token: 'bob-token', servers: ['files'] }), 'trust-context': await pin('workspace') },
        ],
        hosts: [workerHostEntry(host)],
        servers: { files: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } } },
      },
      { logLevel: 'warn' },
    );
  }, 60_000);
  afterAll(async () => {
    await procs.stopAll();
    rmSync(root, { recursive: true, force: true });
  });

  it('fails the launch under a pin that does not grant the server\'s root, with the server\'s own stderr and the grant to add; passes the one that does; leaves nothing running', async () => {
    const dir = join(root, 'laptop');
    const spec = { worker: worker.url, host, profiles, servers, sidecar: { 'allow-uncontained': false } };
    const plain = await doctorOn(dir, spec);
    expect(plain.code, plain.stdout).toBe(0);

    const { code, stdout, line } = await doctorOn(dir, spec, ['--launch']);
    expect(code, stdout).toBe(1);
    const narrow = line('launch "files" under "narrow"');
    expect(narrow).toMatch(new RegExp(`^FAIL launch "files" under "narrow": pinned by agent "alice"; contained, it exited with code 1 before answering initialize \\(server-exited\\); its stderr: .*Cannot access directory ${escape(project)}.*None of the specified directories are accessible\\n`));
    expect(narrow).toContain(`→ The server names ${project}, which "narrow" does not grant: add {"source-path": "${project}", "access-mode": "read-only"} (or "read-write", if the server must write there) to the "filesystem-paths" of ${join(dir, 'trust-profiles', 'narrow.json')}`);
    expect(line('launch "files" under "workspace"')).toMatch(/^ok {3}launch "files" under "workspace": pinned by agent "bob"; contained, it answered initialize as secure-filesystem-server \S+ with \d+ tools$/);
    // No agent names no profile here, and the host has no floor: no launch under a floor alone.
    expect(stdout).not.toMatch(/launch "files" under the/);
    expect(processesNaming(project)).toEqual([]);
  }, 60_000);

  it('fails a server that does not answer within its deadline, and ends it', async () => {
    const dir = join(root, 'hanging');
    // A tag on its command line, so that what is left of it could be found.
    const tag = `hang-${Date.now()}`;
    writeSidecarDir(dir, { worker: `http://127.0.0.1:${await freePort()}`, host, servers: { hang: { command: process.execPath, args: [HANG, tag] } } });
    const checks = await runWorkstationDoctor(dir, { launch: { timeoutMs: 500 } });
    expect(checks.find((c) => c.name === 'launch "hang" uncontained')).toMatchObject({
      ok: false,
      // Its stderr follows when it got that far: how far a server gets in 0.5 s is no part of this test.
      detail: expect.stringMatching(/^for an agent that names no trust profile; uncontained, it did not start and answer within 0\.5 s \(doctor's deadline\)/),
      fix: `Run its command in a terminal to see why: ${process.execPath} with the 2 arguments of its mcp.json entry`,
    });
    expect(processesNaming(tag)).toEqual([]);
  });

  it('says an npx server under a profile with no internet fetches what it cannot reach, and how to fix it', async () => {
    const dir = join(root, 'offline');
    const servers = { memory: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] } };
    writeSidecarDir(dir, { worker: `http://127.0.0.1:${await freePort()}`, host, servers, profiles: { offline: { 'network-capabilities': [] } }, sidecar: { 'trust-profile': 'offline', 'allow-uncontained': false } });
    const checks = await runWorkstationDoctor(dir, { launch: { timeoutMs: 500 } });
    const launched = checks.find((c) => c.name.startsWith('launch "memory"'));
    expect(launched).toMatchObject({
      ok: false,
      fix: 'npx fetches the server\'s package at each start, from a network its trust profile does not grant (it retries, then fails): install the package on this host and name its own command in mcp.json, or grant "internet-client" in the profile',
    });
    // Said once, as the fix: the sidecar's own log line of it is not quoted back.
    expect(launched!.detail).not.toContain('package runner');
    expect(processesNaming('server-memory')).toEqual([]);
  });

  it('refuses to launch under sudo, which would start the servers as root rather than as the sidecar\'s user', async () => {
    expect([
      sudoLaunchRefusal(0, { SUDO_UID: '1000', SUDO_USER: 'alice' }),
      sudoLaunchRefusal(0, { SUDO_UID: '1000' }),
      sudoLaunchRefusal(0, {}),
      sudoLaunchRefusal(0, { SUDO_UID: '0', SUDO_USER: 'root' }),
      sudoLaunchRefusal(1000, { SUDO_UID: '1000' }),
    ]).toEqual([
      '--launch would start servers as root, under sudo, where the sidecar runs them as alice: run doctor --launch as that user, without sudo',
      '--launch would start servers as root, under sudo, where the sidecar runs them as uid 1000: run doctor --launch as that user, without sudo',
      null,
      null,
      null,
    ]);
    // As a usage error, before anything starts. Only a root process can be under sudo, so this part runs as root (as CI does).
    if (process.getuid?.() !== 0) return;
    const dir = join(root, 'sudo');
    writeSidecarDir(dir, { worker: `http://127.0.0.1:${await freePort()}`, host, servers: { tree: { command: process.execPath, args: [TREE_HANG, join(root, 'never.fifo')] } } });
    const env = { ...process.env, SUDO_UID: '4242', SUDO_USER: 'alice' };
    const result = await promisify(execFile)(process.execPath, [await cli(), 'doctor', '--config-dir', dir, '--launch'], { env }).catch((e: { code: number; stderr: string }) => e);
    expect(result).toMatchObject({ code: 1, stderr: expect.stringContaining('under sudo, where the sidecar runs them as alice: run doctor --launch as that user, without sudo') });
  });

  it('without --config-dir, --launch is a usage error', async () => {
    const result = await promisify(execFile)(process.execPath, [await cli(), 'doctor', '--launch'], { env: { ...process.env } }).catch((e: { code: number; stderr: string }) => e);
    expect(result).toMatchObject({ code: 1, stderr: expect.stringContaining('--launch needs --config-dir DIR') });
  });

  it('says when it launched nothing, and why, rather than print no launch line (review s23)', async () => {
    const doctor = async (dir: string) => (await promisify(execFile)(process.execPath, [await cli(), 'doctor', '--config-dir', dir, '--launch'], { env: { ...process.env } }).catch((e: { stdout: string }) => e)).stdout;
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    const empty = join(root, 'no-servers');
    writeSidecarDir(empty, { worker: unreachable, host });
    expect(await doctor(empty)).toMatch(/launch: nothing launched: this host defines no server \(mcp-servers\/mcp\.json and its user and machine layers\)/);
    const unprofiled = join(root, 'no-floor');
    writeSidecarDir(unprofiled, { worker: unreachable, host, servers, sidecar: { 'allow-uncontained': false } });
    expect(await doctor(unprofiled)).toMatch(/launch: nothing launched: "files" would be refused \(denied-by-policy\): no floor, no "allow-uncontained", no trust profile of the server's own, and no agent pins one/);
    // The worker's agents pin narrow and workspace, which this host lacks.
    const pinsMissing = join(root, 'pins-missing');
    writeSidecarDir(pinsMissing, { worker: worker.url, host, servers, sidecar: { 'allow-uncontained': false } });
    expect(await doctor(pinsMissing)).toContain('and the trust profiles agents pin are not on this host (their checks above say which)');
  });

  it('launches under the host\'s floor alone when the worker cannot say what it expects, and ends the server\'s whole process tree on Ctrl-C', async () => {
    const dir = join(root, 'unlinked');
    const fifo = join(root, 'tree.fifo');
    execFileSync('mkfifo', [fifo]);
    writeSidecarDir(dir, { worker: `http://127.0.0.1:${await freePort()}`, host, servers: { tree: { command: process.execPath, args: [TREE_HANG, fifo] } } });
    const child = spawn(process.execPath, [await cli(), 'doctor', '--config-dir', dir, '--launch'], { env: { ...process.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // The server writes its pids once it and its grandchild run: the read returns then, unless doctor ends first.
    const first = await Promise.race([readFile(fifo, 'utf8').then((text) => ({ text })), exited.then((code) => ({ code }))]);
    if ('code' in first) {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)); // ends the pending read
      expect.fail(`doctor exited with code ${first.code} before the server started: ${stderr}`);
    }
    const pids = JSON.parse(first.text) as { server: number; grandchild: number };
    expect(isAlive(pids.server) && isAlive(pids.grandchild)).toBe(true);
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain('doctor: interrupted; every server it started has ended');
    expect([pids.server, pids.grandchild].filter(isAlive)).toEqual([]);
  }, 60_000);
});
