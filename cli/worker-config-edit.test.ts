/**
 * The commands that edit a worker config (`host add`, `agent add`, `agent remove`), run in process
 * on files in a temp dir: what they write, what they print, and what they refuse to write.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sha256Hex } from '../shared/credentials.ts';
import { parseWorkerConfig } from '../worker/config/worker-config.ts';
import { runAgentCommand } from './agent-command.ts';
import { runHostAddCommand } from './host-add.ts';
import { formatJson } from './json-file.ts';
import { whenTheWorkerHasIt } from './worker-config-file.ts';
import { runAdminTokenCommand } from './admin-token-command.ts';

const root = mkdtempSync(join(tmpdir(), 'sy-config-edit-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const KEY = `ed25519:${'K'.repeat(42)}A`;
const REV = (c: string) => `sha256:${c.repeat(64)}`;
const line = (extra: Record<string, unknown> = {}) => JSON.stringify({ 'entity-id': 'laptop', 'public-key': KEY, servers: ['files'], 'trust-profiles': { workspace: REV('1') }, ...extra });

let out: string;
beforeEach(() => {
  out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((out += String(chunk)), true));
});
afterEach(() => vi.restoreAllMocks());

let n = 0;
const fresh = () => join(root, `worker-${n++}.json`);
const read = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown> & { agents: Record<string, unknown>[] };

describe('formatJson', () => {
  it('keeps what fits in 100 columns on one line and breaks the rest, in the file\'s indent', () => {
    const value = { agents: [{ name: 'a', servers: ['x', 'y'] }], long: ['a'.repeat(60), 'b'.repeat(60)] };
    expect(formatJson(value)).toBe(`{\n  "agents": [{"name": "a", "servers": ["x", "y"]}],\n  "long": [\n    "${'a'.repeat(60)}",\n    "${'b'.repeat(60)}"\n  ]\n}\n`);
    expect(formatJson({ a: [] }, '\t')).toBe('{\n\t"a": []\n}\n');
  });
});

describe('switchyard host add', () => {
  it('creates the config from a host line: the host with its key and revisions, its servers bound to it, each change printed', async () => {
    const path = fresh();
    expect(await runHostAddCommand(['--config', path, line()])).toBe(0);
    expect(read(path)).toEqual({
      agents: [],
      hosts: [{ 'entity-id': 'laptop', 'public-key': KEY, 'trust-profiles': { workspace: REV('1') } }],
      servers: { files: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } } },
    });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(out).toContain(`Created ${path}:\n  + host "laptop" with key ${KEY}\n  + host "laptop" trust profile "workspace" at ${REV('1')}\n  + server "files" on host "laptop"`);
    expect(parseWorkerConfig(read(path), { runtime: 'edge' }).hosts).toHaveLength(1);
  });

  it('adds servers named like the properties every object has (review s19: "constructor" was taken for one defined elsewhere)', async () => {
    const path = fresh();
    expect(await runHostAddCommand(['--config', path, line({ servers: ['constructor', 'toString', 'files'] })])).toBe(0);
    expect(Object.keys(read(path).servers as Record<string, unknown>)).toEqual(['constructor', 'toString', 'files']);
    expect(out).toContain('+ server "constructor" on host "laptop"');
  });

  it('moves the pins of agents using the host to the revision it now reports, showing each; --dry-run writes nothing', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    await runAgentCommand(['add', 'alice', '--servers', 'files', '--trust-profile', 'workspace', '--config', path]);
    const before = readFileSync(path, 'utf8');
    out = '';
    await runHostAddCommand(['--config', path, line({ 'trust-profiles': { workspace: REV('2') } }), '--dry-run']);
    expect(out).toContain(`Would change ${path} (--dry-run: nothing written):\n  ~ host "laptop" trust profile "workspace" ${REV('1')} → ${REV('2')}\n  ~ agent "alice" trust profile "workspace" ${REV('1')} → ${REV('2')}`);
    expect(readFileSync(path, 'utf8')).toBe(before);
    await runHostAddCommand(['--config', path, line({ 'trust-profiles': { workspace: REV('2') } })]);
    expect((read(path).agents[0]!['trust-context'] as Record<string, string>)['trust-profile-revision']).toBe(REV('2'));
    out = '';
    await runHostAddCommand(['--config', path, line({ 'trust-profiles': { workspace: REV('2') } })]);
    expect(out).toContain('as it reports itself: nothing to change');
  });

  it('refuses a line that gives a known host another key unless --rekey says the host made a new one', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    const before = readFileSync(path, 'utf8');
    const other = `ed25519:${'Q'.repeat(42)}A`;
    await expect(runHostAddCommand(['--config', path, line({ 'public-key': other })])).rejects.toThrow(
      `${path} has host "laptop" with another key (${KEY}): this line's key is a new identity, and the old key could no longer link. If laptop made a new key (its host.key was replaced), add --rekey; if not, do not add this line`,
    );
    expect(readFileSync(path, 'utf8')).toBe(before);
    out = '';
    await runHostAddCommand(['--config', path, line({ 'public-key': other }), '--rekey']);
    expect(out).toContain(`~ host "laptop" key ${KEY} → ${other} (a new identity: the old key can no longer link)`);
    expect((read(path).hosts as Array<{ 'public-key': string }>)[0]!['public-key']).toBe(other);
  });

  it('says how servers come to be, for a host or for one machine, and a broken single-machine config\'s own problems only', async () => {
    const path = fresh();
    await expect(runAgentCommand(['add', 'a', '--servers', 'files', '--config', path])).rejects.toThrow(
      `${path} defines no server "files" (it has none yet: add a host first, switchyard host add; or, for one machine with no link (switchyard worker --runtime node), bind each to it under "servers" as {"executor": {"type": "local"}} (README: "One machine, no link"))`,
    );
    writeFileSync(path, JSON.stringify({ servers: { files: { executor: { type: 'local' } }, notes: { executor: { type: 'local' } } } }));
    const broken = await runAgentCommand(['add', 'a', '--servers', 'files', '--config', path]).then(() => null, (error: Error) => error.message);
    expect(broken).toBe(`${path} is not a valid worker config, so it was left as it is: fix it first (switchyard check ${path}):\n  agents: is required`);
  });

  it('leaves a config that gives a key twice untouched, naming the key: its rewrite would drop one of the two', async () => {
    const path = fresh();
    const text = '{"agents": [], "servers": {\n  "files": {"executor": {"type": "http", "url": "https://a.example.com/mcp"}},\n  "files": {"executor": {"type": "http", "url": "https://b.example.com/mcp"}}\n}}';
    writeFileSync(path, text);
    await expect(runHostAddCommand(['--config', path, line()])).rejects.toThrow(`${path}: servers.files: defined twice (line 2 and line 3): JSON keeps only the last, so remove one`);
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  it('keeps a server defined elsewhere and says so, and names a server bound here that the host no longer has', async () => {
    const path = fresh();
    writeFileSync(path, JSON.stringify({ agents: [], servers: { files: { executor: { type: 'http', url: 'https://203.0.113.5/mcp' } } } }));
    await runHostAddCommand(['--config', path, line()]);
    expect(out).toContain('! server "files" is already defined elsewhere');
    expect((read(path).servers as Record<string, unknown>).files).toEqual({ executor: { type: 'http', url: 'https://203.0.113.5/mcp' } });
    await runHostAddCommand(['--config', path, line({ servers: ['notes'] })]);
    await runHostAddCommand(['--config', path, line({ servers: [] })]);
    expect(out).toContain('! server "notes" is bound to host "laptop", which does not define it: agents get server-not-found');
  });

  it('refuses a bad line or an invalid config with path: message, writing nothing', async () => {
    const path = fresh();
    await expect(runHostAddCommand(['--config', path, '{"entity-id":"laptop","public-key":"nope"}'])).rejects.toThrow(/Invalid host line: public-key: /);
    await expect(runHostAddCommand(['--config', path, 'entity-id laptop'])).rejects.toThrow(/Invalid host line: not JSON/);
    writeFileSync(path, JSON.stringify({ agents: [{ name: 'x' }], servers: {} }));
    await expect(runHostAddCommand(['--config', path, line()])).rejects.toThrow(/is not a valid worker config, so it was left as it is.*\n {2}agents\[0\]\.token-sha256: /s);
    expect(read(path)).toEqual({ agents: [{ name: 'x' }], servers: {} });
  });
});

describe('switchyard agent add / remove', () => {
  it('prints a fresh token once, stores only its sha-256, pins the revision the host reported, prints client configs', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    out = '';
    expect(await runAgentCommand(['add', 'alice', '--servers', 'files', '--trust-profile', 'workspace', '--config', path, '--url', 'https://yard.example.com'])).toBe(0);
    const token = /^ {2}(sy_[A-Za-z0-9_-]{43})$/m.exec(out)?.[1];
    expect(token).toBeDefined();
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain(token);
    expect(read(path).agents).toEqual([
      { name: 'alice', 'token-sha256': await sha256Hex(token!), servers: ['files'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': REV('1') } },
    ]);
    expect(text).toContain('"servers": ["files"]');
    expect(out).toContain(`claude mcp add --transport http switchyard https://yard.example.com/mcp --header "Authorization: Bearer ${token}"`);
    expect(out).toContain(`  {"url":"https://yard.example.com/mcp","headers":{"Authorization":"Bearer ${token}"}}`);
    // Another run makes another token; without a profile, the note says what the host then decides.
    let err = '';
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((err += String(chunk)), true));
    await runAgentCommand(['add', 'bob', '--servers', 'files', '--config', path]);
    expect(err).toBe('note: agent "bob" names no trust profile, so its servers on hosts (files) run under each host\'s floor ("trust-profile" in its sidecar.json); a host with none (and no "allow-uncontained") refuses them with denied-by-policy: pin one with agent set bob --trust-profile REF\n');
    expect(out.match(/sy_[A-Za-z0-9_-]{43}/g)?.filter((t) => t !== token).length).toBeGreaterThan(0);
    expect(read(path).agents[1]).not.toHaveProperty('trust-context');
  });

  it('gives Claude a custom connector only for a public https URL (it connects from the cloud), else Claude Desktop through mcp-remote', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    out = '';
    await runAgentCommand(['add', 'a', '--servers', 'files', '--config', path, '--url', 'https://yard.example.com']);
    expect(out).toContain('\nClaude (claude.ai, Desktop, mobile): Settings > Connectors > Add custom connector, paste https://yard.example.com/mcp, approve with this token (first add "oauth": {"built-in": {}} to the worker config: a connector signs in with OAuth)\n');
    expect(out).not.toContain('mcp-remote');
    writeFileSync(path, JSON.stringify({ ...read(path), oauth: { 'built-in': {} } }));
    out = '';
    await runAgentCommand(['add', 'b', '--servers', 'files', '--config', path, '--url', 'https://yard.example.com']);
    expect(out).toContain('\nClaude (claude.ai, Desktop, mobile): Settings > Connectors > Add custom connector, paste https://yard.example.com/mcp, approve with this token\n');
    for (const url of ['http://127.0.0.1:8787', 'https://localhost:8443', 'https://192.168.1.20']) {
      out = '';
      await runAgentCommand(['add', `c${url.length}`, '--servers', 'files', '--config', path, '--url', url]);
      expect(out, url).toContain(`\nClaude Desktop (claude_desktop_config.json, through mcp-remote: a custom connector needs a public https URL):\n  {"mcpServers":{"switchyard":{"command":"npx","args":["-y","mcp-remote","${url}/mcp",`);
      expect(out, url).not.toContain('Add custom connector');
    }
  });

  it('refuses a profile no host of its servers reported, an unknown server and a name in use, naming the fix', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    await expect(runAgentCommand(['add', 'a', '--servers', 'files', '--trust-profile', 'other', '--config', path])).rejects.toThrow(
      'Host "laptop" reported no trust profile "other": on that workstation add trust-profiles/other.json, run sidecar host-entry and paste its line here (switchyard host add)',
    );
    await expect(runAgentCommand(['add', 'a', '--servers', 'files,ghost', '--config', path])).rejects.toThrow(`${path} defines no server "ghost" (it has files)`);
    await expect(runAgentCommand(['add', 'a', '--servers', 'files'])).rejects.toThrow(/^Missing --config FILE: the worker config to add the agent to\nUsage: switchyard agent add /);
    await expect(runAgentCommand(['remove', 'a'])).rejects.toThrow(/^Missing --config FILE: the worker config to remove the agent from\n/);
    await runAgentCommand(['add', 'a', '--servers', 'files', '--config', path]);
    await expect(runAgentCommand(['add', 'a', '--servers', 'files', '--config', path])).rejects.toThrow('already has agent "a": remove it first');
    // A bad --url is refused before the save: the token, printed after it, is never lost.
    await expect(runAgentCommand(['add', 'b', '--servers', 'files', '--config', path, '--url', 'yard.example.com'])).rejects.toThrow('Invalid --url "yard.example.com": expected the worker\'s http(s) URL agents reach');
    expect(read(path).agents.map((agent) => agent.name)).toEqual(['a']);
  });

  it('takes the agent URL a user was given for --url (its /mcp dropped), refuses any other path, and warns of plain http off this machine', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    let err = '';
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((err += String(chunk)), true));
    out = '';
    await runAgentCommand(['add', 'a', '--servers', 'files', '--trust-profile', 'workspace', '--config', path, '--url', 'https://yard.example.com/mcp']);
    expect(out).toContain('paste https://yard.example.com/mcp,');
    expect(out).not.toContain('/mcp/mcp');
    expect(err).toBe('');
    await expect(runAgentCommand(['add', 'b', '--servers', 'files', '--config', path, '--url', 'https://yard.example.com/switchyard'])).rejects.toThrow(
      'Invalid --url "https://yard.example.com/switchyard": must be the worker\'s origin (https://yard.example.com), which serves /mcp from its root',
    );
    await runAgentCommand(['add', 'c', '--servers', 'files', '--trust-profile', 'workspace', '--config', path, '--url', 'http://yard.example.com']);
    expect(err).toBe("note: http://yard.example.com is plain http off this machine: the agent's token crosses the network readable; put the worker behind TLS and use its https URL\n");
    expect(read(path).agents.map((agent) => agent.name)).toEqual(['a', 'c']);
  });

  it('set changes an agent\'s servers and trust profile, keeping its token, each change printed; --dry-run writes nothing', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line({ servers: ['files', 'notes'] })]);
    await runAgentCommand(['add', 'a', '--servers', 'files', '--config', path]);
    const token = read(path).agents[0]!['token-sha256'];
    const before = readFileSync(path, 'utf8');
    out = '';
    await runAgentCommand(['set', 'a', '--servers', 'files,notes', '--trust-profile', 'workspace', '--dry-run', '--config', path]);
    expect(out).toBe(`Would change ${path} (--dry-run: nothing written):\n  ~ agent "a" servers files → files, notes\n  ~ agent "a" trust profile none → "workspace" at ${REV('1')}\n`);
    expect(readFileSync(path, 'utf8')).toBe(before);

    out = '';
    await runAgentCommand(['set', 'a', '--servers', 'files,notes', '--trust-profile', 'workspace', '--containment', 'required', '--config', path]);
    expect(read(path).agents[0]).toEqual({ name: 'a', 'token-sha256': token, servers: ['files', 'notes'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': REV('1'), containment: 'required' } });
    expect(out).toContain(`  ~ agent "a" containment none → required\n`);
    expect(parseWorkerConfig(read(path), { runtime: 'edge' }).agents[0]!.servers).toEqual(['files', 'notes']);

    // A server it loses is all that changes; the pin stays as the hosts report it.
    out = '';
    await runAgentCommand(['set', 'a', '--servers', 'notes', '--config', path]);
    expect(out).toBe(`Updated ${path} (the agent's token is unchanged; once the worker has the new config, its sessions using a server it lost end):\n  ~ agent "a" servers files, notes → notes\n${whenTheWorkerHasIt('edge')}\n`);
    out = '';
    await runAgentCommand(['set', 'a', '--servers', 'notes', '--config', path]);
    expect(out).toBe('Agent "a" is already so: nothing to change\n');
    await expect(runAgentCommand(['set', 'a', '--servers', 'ghost', '--config', path])).rejects.toThrow(`${path} defines no server "ghost" (it has files, notes)`);
    await expect(runAgentCommand(['set', 'nobody', '--servers', 'notes', '--config', path])).rejects.toThrow(`${path} has no agent "nobody" (it has a)`);
    expect(read(path).agents[0]!['token-sha256']).toBe(token);
  });

  it('refuses hosts that disagree on a profile, since one agent pins one revision', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    await runHostAddCommand(['--config', path, JSON.stringify({ 'entity-id': 'desk', 'public-key': `ed25519:${'D'.repeat(42)}A`, servers: ['notes'], 'trust-profiles': { workspace: REV('9') } })]);
    await expect(runAgentCommand(['add', 'a', '--servers', 'files,notes', '--trust-profile', 'workspace', '--config', path])).rejects.toThrow(
      `The hosts of these servers have trust profile "workspace" at different revisions ("laptop" at ${REV('1')}; "desk" at ${REV('9')})`,
    );
  });

  it('pin moves a pin given by hand to the revision the hosts reported, showing it; then has nothing to change', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    await runAgentCommand(['add', 'a', '--servers', 'files', '--trust-profile', 'workspace', '--trust-profile-revision', REV('0'), '--config', path]);
    out = '';
    await runAgentCommand(['pin', 'a', '--config', path, '--dry-run']);
    expect(out).toBe(`Would change ${path} (--dry-run: nothing written):\n  ~ agent "a" trust profile "workspace" ${REV('0')} → ${REV('1')}\n`);
    await runAgentCommand(['pin', 'a', '--config', path]);
    expect((read(path).agents[0]!['trust-context'] as Record<string, string>)['trust-profile-revision']).toBe(REV('1'));
    out = '';
    await runAgentCommand(['pin', 'a', '--config', path]);
    expect(out).toContain('already pins trust profile "workspace"');
  });

  it('pins a local server\'s profile at the revision the single-machine dir has, from the config\'s folder or --config-dir (review s23: pin had no way to)', async () => {
    const { TrustProfileStore } = await import('../sidecar/trust/profile-store.ts');
    const { mkdirSync } = await import('node:fs');
    const folder = join(root, `local-${n++}`);
    const elsewhere = join(folder, 'elsewhere');
    for (const dir of [folder, elsewhere]) mkdirSync(join(dir, 'trust-profiles'), { recursive: true });
    writeFileSync(join(folder, 'trust-profiles', 'workspace.json'), JSON.stringify({ 'network-capabilities': [] }));
    writeFileSync(join(elsewhere, 'trust-profiles', 'workspace.json'), JSON.stringify({ 'network-capabilities': ['loopback'] }));
    const revision = async (dir: string) => (await new TrustProfileStore(join(dir, 'trust-profiles')).load('workspace')).revision;
    const path = join(folder, 'worker.json');
    writeFileSync(path, JSON.stringify({ agents: [], servers: { echo: { executor: { type: 'local' } }, docs: { executor: { type: 'http', url: 'https://docs.example.com/mcp' } } } }));
    const pinned = () => (read(path).agents[0]!['trust-context'] as Record<string, string>)['trust-profile-revision'];

    await runAgentCommand(['add', 'a', '--servers', 'echo', '--trust-profile', 'workspace', '--config', path]);
    expect(pinned()).toBe(await revision(folder));
    // A config that binds a server to this machine is one Workers refuses: it is not told to send it there.
    expect(out).toContain(whenTheWorkerHasIt('node'));
    expect(out).not.toContain('wrangler secret put');
    await runAgentCommand(['pin', 'a', '--config-dir', elsewhere, '--config', path]);
    expect(pinned()).toBe(await revision(elsewhere));
    await expect(runAgentCommand(['add', 'b', '--servers', 'echo', '--trust-profile', 'ghost', '--config', path])).rejects.toThrow(
      `This machine (single-machine mode) has no trust profile "ghost" in ${join(folder, 'trust-profiles')}: add ghost.json there, or name the dir the mode reads with --config-dir DIR`,
    );
    // An edge-direct server has no one to report a revision: pin says to give it with agent set, which takes one.
    await runAgentCommand(['add', 'c', '--servers', 'docs', '--trust-profile', 'workspace', '--trust-profile-revision', REV('0'), '--config', path]);
    await expect(runAgentCommand(['pin', 'c', '--config', path])).rejects.toThrow('None of the servers docs runs on a host, so no host reports trust profile "workspace": give its revision with agent set c --trust-profile-revision sha256:…');
  });

  it('warns, as check would, of an agent this machine\'s own servers will refuse: no profile, no floor, no "allow-uncontained" (walk s25)', async () => {
    const { mkdirSync } = await import('node:fs');
    const folder = join(root, `local-${n++}`);
    mkdirSync(join(folder, 'mcp-servers'), { recursive: true });
    writeFileSync(join(folder, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { echo: { command: 'echo' }, cat: { command: 'cat' } } }));
    const path = join(folder, 'worker.json');
    writeFileSync(path, JSON.stringify({ agents: [], servers: { echo: { executor: { type: 'local' } }, cat: { executor: { type: 'local' } } } }));
    let err = '';
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((err += String(chunk)), true));

    expect(await runAgentCommand(['add', 'a', '--servers', 'echo', '--config', path])).toBe(0);
    expect(read(path).agents.map((a) => a.name)).toEqual(['a']);
    expect(err).toBe(
      'warning: agents[0].servers[0]: server "echo" on this machine (single-machine mode) will be refused for agent "a" (denied-by-policy): the agent names no trust profile, and the host has no trust floor and no "allow-uncontained"; ' +
        'give the agent a "trust-context", or on the host set "trust-profile" in sidecar.json (or in "echo"\'s mcp.json entry) or "allow-uncontained": true\n',
    );
    // set says it of the servers it gives too.
    err = '';
    expect(await runAgentCommand(['set', 'a', '--servers', 'echo,cat', '--config', path])).toBe(0);
    expect(err.split('\n').filter((l) => l !== '').map((l) => l.split(':')[1])).toEqual([' agents[0].servers[0]', ' agents[0].servers[1]']);
    // With the host's consent to run uncontained, nothing to say.
    writeFileSync(join(folder, 'sidecar.json'), JSON.stringify({ 'allow-uncontained': true }));
    err = '';
    expect(await runAgentCommand(['add', 'b', '--servers', 'echo', '--config', path])).toBe(0);
    expect(err).toBe('');
  });

  it('remove takes the agent out and keeps the rest', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    await runAgentCommand(['add', 'a', '--servers', 'files', '--config', path]);
    await runAgentCommand(['add', 'b', '--servers', 'files', '--config', path]);
    await runAgentCommand(['remove', 'a', '--config', path]);
    expect(read(path).agents.map((a) => a.name)).toEqual(['b']);
    await expect(runAgentCommand(['remove', 'a', '--config', path])).rejects.toThrow('has no agent "a" (it has b)');
  });
});

describe('switchyard admin-token', () => {
  it('writes a fresh token\'s sha-256 and prints the token once; run again, it replaces it and says what that ends', async () => {
    const path = fresh();
    await runHostAddCommand(['--config', path, line()]);
    out = '';
    expect(await runAdminTokenCommand(['--config', path])).toBe(0);
    const first = /\n {2}(sy_[A-Za-z0-9_-]{43})\n/.exec(out)?.[1];
    expect(first).toBeDefined();
    expect(read(path)['admin-token-sha256']).toBe(await sha256Hex(first!));
    expect(out.split('\n').slice(0, 2)).toEqual([`Updated ${path}: + admin-token-sha256`, whenTheWorkerHasIt('edge')]);
    expect(parseWorkerConfig(read(path), { runtime: 'edge' })['admin-token-sha256']).toBe(await sha256Hex(first!));

    out = '';
    expect(await runAdminTokenCommand(['--config', path])).toBe(0);
    const second = /\n {2}(sy_[A-Za-z0-9_-]{43})\n/.exec(out)?.[1];
    expect(second).not.toBe(first);
    expect(read(path)['admin-token-sha256']).toBe(await sha256Hex(second!));
    expect(out.split('\n')[0]).toBe(`Updated ${path}: ~ admin-token-sha256 (the admin token it replaces no longer works, nor do the OAuth grants that token approved)`);
    // The rest of the config as it was.
    expect(read(path).hosts).toEqual([{ 'entity-id': 'laptop', 'public-key': KEY, 'trust-profiles': { workspace: REV('1') } }]);
  });

  it('needs --config, saying what for', async () => {
    await expect(runAdminTokenCommand([])).rejects.toThrow('admin-token needs --config FILE: the worker config to write the token\'s sha-256 into');
  });
});
