/**
 * `switchyard start` (npm start) stopped the way a terminal stops it: SIGINT to the whole process
 * group, which reaches the worker under Deno and this process at once, while an agent session
 * holds channels to every demo server. Both ends then shut down at the same moment; nothing of
 * that may be logged as a warning or an error, and the exit is clean.
 */
import { spawn, spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { groupMembers, waitUntil } from '../test/support/processes.ts';

const REPO = join(import.meta.dirname, '..');
const stateDir = mkdtempSync(join(tmpdir(), 'sy-start-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

/** `switchyard start` on a free port, in a process group of its own (so the test can signal the whole group), logging at warn. */
function startCli(state: string, extra: string[] = [], logLevel = 'warn') {
  return spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'start', '--port', '0', '--state-dir', state, ...extra], {
    cwd: REPO,
    env: { ...process.env, SWITCHYARD_LOG_LEVEL: logLevel },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
}

/** `switchyard start` with what it prints collected, its exit, and its banner (rejecting if it exits first). */
function watchStart(state: string, extra: string[] = [], logLevel = 'warn') {
  const started = startCli(state, extra, logLevel);
  const printed = { out: '', err: '' };
  started.stdout!.on('data', (d: Buffer) => (printed.out += d.toString()));
  started.stderr!.on('data', (d: Buffer) => (printed.err += d.toString()));
  const exited = new Promise<number | null>((resolve) => started.once('exit', (code) => resolve(code)));
  const banner = new Promise<void>((resolve, reject) => {
    started.stdout!.on('data', () => printed.out.includes('Ctrl-C stops everything') && resolve());
    void exited.then(() => reject(new Error(`start exited before its banner:\n${printed.out}\n${printed.err}`)));
  });
  return { started, printed, exited, banner };
}

/** Stops a started CLI as a terminal's Ctrl-C does (SIGINT to its group; SIGKILL after 20 s); its exit code. */
async function stopAsCtrlC(started: ReturnType<typeof startCli>, exited: Promise<number | null>): Promise<number | null> {
  if (started.exitCode === null) process.kill(-started.pid!, 'SIGINT');
  const timer = setTimeout(() => process.kill(-started.pid!, 'SIGKILL'), 20_000);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

/** Runs start until its banner, then stops it as Ctrl-C does; what it printed and how it exited. */
async function startAndStop(state: string): Promise<{ code: number | null; out: string; err: string }> {
  const { started, printed, exited, banner } = watchStart(state);
  const timer = setTimeout(() => process.kill(-started.pid!, 'SIGKILL'), 30_000);
  try {
    await banner;
  } finally {
    if (started.exitCode === null) process.kill(-started.pid!, 'SIGINT');
  }
  const code = await exited;
  clearTimeout(timer);
  return { code, ...printed };
}

/**
 * Runs start with `extra` in a fresh state dir until its banner, hands `check` the client config
 * it wrote and what it printed, then stops it as Ctrl-C does: it must exit 0.
 */
async function whileRunning(prefix: string, extra: string[], check: (client: { url: string; headers: Record<string, string> }, printed: { out: string; err: string }) => Promise<void>): Promise<void> {
  const state = mkdtempSync(join(tmpdir(), prefix));
  const { started, printed, exited, banner } = watchStart(state, extra);
  try {
    await banner;
    const config = JSON.parse(readFileSync(join(state, 'client-config.json'), 'utf8')) as { mcpServers: { switchyard: { url: string; headers: Record<string, string> } } };
    await check(config.mcpServers.switchyard, printed);
  } finally {
    const code = await stopAsCtrlC(started, exited);
    rmSync(state, { recursive: true, force: true });
    expect(code, printed.err).toBe(0);
  }
}

/**
 * Runs a start on `state` that must fail: it exits 1, and nothing of its process group (Deno, the
 * containment probe) is left; resolves with what it wrote on stderr.
 */
async function failedStart(state: string): Promise<string> {
  const started = startCli(state);
  let err = '';
  started.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => started.once('exit', (code) => resolve(code)));
  const timer = setTimeout(() => process.kill(-started.pid!, 'SIGKILL'), 30_000);
  const code = await exited;
  clearTimeout(timer);
  expect(code, err).toBe(1);
  await waitUntil(() => groupMembers(started.pid!).length === 0, 'the CLI\'s process group to be empty', 10_000);
  return err;
}

describe('switchyard start', () => {
  it('stops on a terminal\'s Ctrl-C with live sessions, exit 0, and logs nothing at warn or error', async () => {
    const { started, printed, exited, banner } = watchStart(stateDir);
    const client = new Client({ name: 'ctrl-c', version: '1.0.0' });
    try {
      await banner;
      const config = JSON.parse(readFileSync(join(stateDir, 'client-config.json'), 'utf8')) as { mcpServers: { switchyard: { url: string; headers: Record<string, string> } } };
      const entry = config.mcpServers.switchyard;
      // The banner follows the sidecar's link: an agent's first request finds the host.
      const health = (await (await fetch(new URL('/healthz', entry.url), { headers: entry.headers })).json()) as { hosts: Array<{ 'entity-id': string; linked: boolean }> };
      expect(health.hosts).toEqual([expect.objectContaining({ 'entity-id': 'this-machine', linked: true })]);
      await client.connect(new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers: entry.headers } }));
      // Every demo server now has a channel and a contained process for this session.
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['everything__echo', 'filesystem__list_directory', 'memory__read_graph']));
      // Claude Desktop reaches this loopback URL through mcp-remote; a custom connector, which connects from the cloud, cannot.
      expect(printed.out).toContain(`Claude Desktop (claude_desktop_config.json, through mcp-remote):\n{\n  "mcpServers": {\n    "switchyard": {\n      "command": "npx",\n      "args": [\n        "-y",\n        "mcp-remote",\n        "${entry.url}",`);
      expect(printed.out).toContain('Claude custom connectors (claude.ai, Desktop, mobile) and ChatGPT connect from the cloud: they\nneed a public https URL, not this local one: forward one to this worker and restart with\n--public-url <that URL> (README: "Connecting agents").\n');
      expect(printed.out).not.toMatch(/connector.*\n\s*http:/);
      // OAuth for the clients that sign in themselves (VS Code, Cursor, Claude Code), with the URL alone.
      const challenge = await fetch(entry.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
      expect(challenge.status).toBe(401);
      const issuer = new URL(entry.url).origin;
      expect(challenge.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${issuer}/.well-known/oauth-protected-resource/mcp", scope="mcp"`);
      expect(((await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json()) as { issuer: string }).issuer).toBe(issuer);

      // A second start on the same state dir would rewrite this one's configs under it: refused, naming this one.
      const clientConfig = readFileSync(join(stateDir, 'client-config.json'), 'utf8');
      const second = spawnSync(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'start', '--port', '0', '--state-dir', stateDir], { cwd: REPO, encoding: 'utf8', timeout: 30_000 });
      expect([second.status, second.stderr.trim()]).toEqual([
        1,
        `switchyard: State dir ${stateDir} is in use by switchyard start on ${issuer} (pid ${started.pid}): stop it, or pass --state-dir with another folder`,
      ]);
      expect(readFileSync(join(stateDir, 'client-config.json'), 'utf8')).toBe(clientConfig);
    } finally {
      expect(await stopAsCtrlC(started, exited)).toBe(0);
    }
    expect(existsSync(join(stateDir, 'switchyard.lock'))).toBe(false);
    // The tokenless request that starts OAuth discovery is audited at info (no-credential), so it is not here.
    const logged = printed.err.split('\n').filter((line) => /"level":"(warn|error)"/.test(line));
    expect(logged).toEqual([]);
    expect(printed.err).not.toContain('exited unexpectedly');
  }, 90_000);

  it('with --public-url, serves the agents that come through a tunnel by that name (OAuth included), while its own sidecar links on loopback', async () => {
    const state = mkdtempSync(join(tmpdir(), 'sy-start-public-'));
    const { started, printed, exited, banner } = watchStart(state, ['--public-url', 'https://yard.example.test']);
    try {
      await banner;
      const config = JSON.parse(readFileSync(join(state, 'client-config.json'), 'utf8')) as { mcpServers: { switchyard: { url: string; headers: Record<string, string> } } };
      expect(config.mcpServers.switchyard.url).toBe('https://yard.example.test/mcp');
      const local = /Local URL {3}(http:\/\/\S+)\/mcp/.exec(printed.out)![1]!;
      expect(printed.out).toContain('Agent URL   https://yard.example.test/mcp');
      expect(printed.out).toContain('Claude custom connectors (claude.ai, Desktop, mobile) and ChatGPT: add https://yard.example.test/mcp as a custom');
      // The tunnel: the local address, with the Host the cloud client used.
      const viaTunnel = (host: string, headers: Record<string, string> = {}) =>
        new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
          const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tunnel', version: '1' } } });
          const req = request(`${local}/mcp`, { method: 'POST', headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
            let text = '';
            res.on('data', (d: Buffer) => (text += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
          });
          req.on('error', reject);
          req.end(body);
        });
      // Its own sidecar linked on loopback though the worker now names itself by the public URL.
      const health = (await (await fetch(`${local}/healthz`, { headers: config.mcpServers.switchyard.headers })).json()) as { hosts: Array<{ linked: boolean }> };
      expect(health.hosts).toEqual([expect.objectContaining({ linked: true })]);
      const signedIn = await viaTunnel('yard.example.test', config.mcpServers.switchyard.headers);
      expect(signedIn.status, signedIn.body).toBe(200);
      expect(signedIn.headers['mcp-session-id']).toEqual(expect.any(String));
      // OAuth discovery names the public URL, the one a cloud client checks the metadata against.
      const challenge = await viaTunnel('yard.example.test');
      expect(challenge.status).toBe(401);
      expect(challenge.headers['www-authenticate']).toBe('Bearer resource_metadata="https://yard.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp"');
      // Any other name is still refused (DNS rebinding).
      expect((await viaTunnel('evil.example.test', config.mcpServers.switchyard.headers)).status).toBe(403);
    } finally {
      const code = await stopAsCtrlC(started, exited);
      rmSync(state, { recursive: true, force: true });
      expect(code, printed.err).toBe(0);
    }
  }, 90_000);

  it('on every interface (--host 0.0.0.0), prints a URL agents can use and says the token crosses the network in plain http', async () => {
    await whileRunning('sy-start-any-', ['--host', '0.0.0.0'], async (client, printed) => {
      expect(client.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      expect(printed.out).not.toContain('0.0.0.0');
      expect(printed.err).toContain('note: the worker listens on every network interface (HOST=0.0.0.0), over plain http');
      const health = await fetch(new URL('/healthz', client.url), { headers: client.headers });
      expect(health.status).toBe(200);
    });
  }, 90_000);

  it('on IPv6 loopback (--host ::1), writes a worker config it accepts and serves on [::1] (review s21)', async () => {
    await whileRunning('sy-start-v6-', ['--host', '::1'], async (client) => {
      expect(client.url).toMatch(/^http:\/\/\[::1\]:\d+\/mcp$/);
      const health = await fetch(new URL('/healthz', client.url), { headers: client.headers });
      expect(health.status).toBe(200);
    });
  }, 90_000);

  it('names HOST as the source of a host it refuses, as a shell may export one (tcsh exports the machine\'s name)', () => {
    const state = mkdtempSync(join(tmpdir(), 'sy-start-host-'));
    try {
      const run = spawnSync(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'start', '--state-dir', state], { cwd: REPO, encoding: 'utf8', timeout: 30_000, env: { ...process.env, HOST: 'workstation.example.test' } });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('switchyard: Cannot listen on "workstation.example.test" (from HOST): the embedded sidecar links over plain http');
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 60_000);

  it('refuses a --public-url that cloud clients could not use, naming what is wrong, before starting anything', () => {
    const state = mkdtempSync(join(tmpdir(), 'sy-start-bad-url-'));
    try {
      for (const [url, problem] of [
        ['http://yard.example.test', 'must be an https: URL, since Claude and ChatGPT connect only over TLS'],
        ['https://yard.example.test/mcp', "must be the worker's origin alone (https://yard.example.test), which it serves /mcp and OAuth from"],
        ['yard.example.test', 'not an absolute URL (e.g. https://yard.example.com)'],
      ] as const) {
        const run = spawnSync(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'start', '--state-dir', state, '--public-url', url], { cwd: REPO, encoding: 'utf8', timeout: 30_000 });
        expect([url, run.status, run.stderr.trim()]).toEqual([url, 1, `switchyard: Invalid --public-url "${url}": ${problem}`]);
      }
      expect(existsSync(join(state, 'worker.json'))).toBe(false);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 60_000);

  it('exits 1 with the error, leaving no worker behind, when the start fails after the worker listens', async () => {
    const failing = mkdtempSync(join(tmpdir(), 'sy-start-fail-'));
    try {
      // What start writes once Deno listens (the sidecar's config) cannot be written: a folder holds its name.
      mkdirSync(join(failing, 'sidecar', 'sidecar.json'), { recursive: true });
      const err = await failedStart(failing);
      expect(err).toContain(`Cannot write ${join(failing, 'sidecar', 'sidecar.json')}: EISDIR: illegal operation on a directory, rename '${join(failing, 'sidecar', '.sidecar.json')}.`);
      expect(err).toMatch(/\.sidecar\.json\.[0-9a-f]{12}\.tmp' -> '/);
      // What was written to be put in its place is not left behind.
      expect(readdirSync(join(failing, 'sidecar')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    } finally {
      rmSync(failing, { recursive: true, force: true });
    }
  }, 60_000);

  it('exits 1, leaving nothing running, when the client config cannot be written once the sidecar is up (review s21)', async () => {
    const failing = mkdtempSync(join(tmpdir(), 'sy-start-fail-client-'));
    try {
      mkdirSync(join(failing, 'client-config.json'));
      expect(await failedStart(failing)).toContain(`Cannot write ${join(failing, 'client-config.json')}`);
    } finally {
      rmSync(failing, { recursive: true, force: true });
    }
  }, 60_000);

  it('says in plain words why it stops when its worker is stopped or killed from outside, and exits 0 or 1 (review s21)', async () => {
    for (const [signal, code, words] of [
      ['SIGTERM', 0, 'switchyard: The worker was stopped (SIGTERM or SIGINT to Deno); stopping the sidecar'],
      ['SIGKILL', 1, 'switchyard: The worker exited unexpectedly with code 137 (signal 9); stopping the sidecar'],
    ] as const) {
      const state = mkdtempSync(join(tmpdir(), 'sy-start-deno-gone-'));
      const { started, printed, exited, banner } = watchStart(state);
      try {
        await banner;
        const deno = groupMembers(started.pid!).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('deno-worker'));
        expect(deno).toBeDefined();
        process.kill(deno!, signal);
        expect(await exited).toBe(code);
        expect(printed.err).toContain(words);
        await waitUntil(() => groupMembers(started.pid!).length === 0, 'the CLI\'s process group to be empty', 10_000);
      } finally {
        if (started.exitCode === null) process.kill(-started.pid!, 'SIGKILL');
        rmSync(state, { recursive: true, force: true });
      }
    }
  }, 120_000);

  it('puts an edit of the demo trust profile in force at once: ends what ran under the old one, and new sessions run under the new one', async () => {
    const state = mkdtempSync(join(tmpdir(), 'sy-start-profile-'));
    const { started, printed, exited, banner } = watchStart(state);
    const clients: Client[] = [];
    const connect = async () => {
      const config = JSON.parse(readFileSync(join(state, 'client-config.json'), 'utf8')) as { mcpServers: { switchyard: { url: string; headers: Record<string, string> } } };
      const client = new Client({ name: 'profile-edit', version: '1.0.0' });
      clients.push(client);
      await client.connect(new StreamableHTTPClientTransport(new URL(config.mcpServers.switchyard.url), { requestInit: { headers: config.mcpServers.switchyard.headers } }));
      return client;
    };
    const demo = join(state, 'demo');
    const write = (client: Client, name: string) => client.callTool({ name: 'filesystem__write_file', arguments: { path: join(demo, name), content: 'x' } }).catch((error: unknown) => error);
    try {
      await banner;
      const before = await connect();
      await write(before, 'before.txt');
      expect(existsSync(join(demo, 'before.txt'))).toBe(true);

      // Narrowed: the demo folder becomes read-only.
      const profileFile = join(state, 'sidecar', 'trust-profiles', 'demo.json');
      const profile = JSON.parse(readFileSync(profileFile, 'utf8')) as { 'filesystem-paths': Array<{ 'access-mode': string }> };
      profile['filesystem-paths'][0]!['access-mode'] = 'read-only';
      writeFileSync(profileFile, JSON.stringify(profile, null, 2));
      await waitUntil(() => printed.err.includes('note: trust profile "demo" changed'), 'the edit to be put in force', 20_000);
      const pinned = (JSON.parse(readFileSync(join(state, 'worker.json'), 'utf8')) as { agents: Array<{ 'trust-context': { 'trust-profile-revision': string } }> }).agents[0]!['trust-context']['trust-profile-revision'];
      expect(printed.err).toContain(`new sessions run under the edited profile (revision ${pinned})`);
      // The host's entry says so too, as host add would record it.
      expect((JSON.parse(readFileSync(join(state, 'worker.json'), 'utf8')) as { hosts: Array<{ 'trust-profiles': Record<string, string> }> }).hosts[0]!['trust-profiles'].demo).toBe(pinned);

      // The session that ran under the wider grant no longer writes there.
      await write(before, 'after-old-session.txt');
      expect(existsSync(join(demo, 'after-old-session.txt'))).toBe(false);
      // A new session gets the servers (once the worker has read its config again), under the narrowed grant.
      let after!: Client;
      // A session opened just before the worker reads it is ended by that reload (its agent's trust
      // context changed), as early as the client's own initialized notification: the next one is tried.
      await waitUntil(async () => {
        const opened = await connect().catch(() => null);
        if (opened === null) return false;
        after = opened;
        return after.listTools().then(
          ({ tools }) => !tools.some((t) => t.name.endsWith('__unavailable')),
          () => false,
        );
      }, 'a new session to find every demo server', 20_000);
      const read = (await after.callTool({ name: 'filesystem__read_text_file', arguments: { path: join(demo, 'hello.txt') } })) as { content: Array<{ text: string }> };
      expect(read.content[0]!.text).toContain('Hello from the Switchyard demo folder');
      await write(after, 'after-new-session.txt');
      expect(existsSync(join(demo, 'after-new-session.txt'))).toBe(false);
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      const code = await stopAsCtrlC(started, exited);
      rmSync(state, { recursive: true, force: true });
      expect(code, printed.err).toBe(0);
    }
    // Until the worker reads its config again, a launch it asks for names the old revision and is refused (at warn): nothing fails.
    expect(printed.err.split('\n').filter((line) => line.includes('"level":"error"'))).toEqual([]);
  }, 120_000);

  it('passes SIGHUP ("reload now") on to its worker, as switchyard worker does, and re-reads the sidecar dir itself (review s24: only the sidecar heard it)', async () => {
    const state = mkdtempSync(join(tmpdir(), 'sy-start-hup-'));
    const { started, printed, exited, banner } = watchStart(state, [], 'info');
    try {
      await banner;
      process.kill(started.pid!, 'SIGHUP');
      await waitUntil(() => printed.err.includes('"msg":"Worker config unchanged: nothing to reload"'), 'the worker to re-read its config', 20_000);
      await waitUntil(() => printed.err.includes('"msg":"Sidecar config unchanged: nothing to reload"'), 'the sidecar to re-read its dir', 20_000);
    } finally {
      const code = await stopAsCtrlC(started, exited);
      rmSync(state, { recursive: true, force: true });
      expect(code, printed.err).toBe(0);
    }
  });

  it('records its host\'s trust profiles in worker.json, as host add would, so agent add --trust-profile pins one on it', async () => {
    const state = mkdtempSync(join(tmpdir(), 'sy-start-pin-'));
    try {
      const run = await startAndStop(state);
      expect(run.code, run.err).toBe(0);
      const workerJson = join(state, 'worker.json');
      const added = spawnSync(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'agent', 'add', 'bob', '--servers', 'memory', '--trust-profile', 'demo', '--config', workerJson], { cwd: REPO, encoding: 'utf8' });
      expect(added.status, added.stderr).toBe(0);
      const config = JSON.parse(readFileSync(workerJson, 'utf8')) as { agents: Array<{ name: string; 'trust-context'?: { 'trust-profile-revision': string } }>; hosts: Array<{ 'trust-profiles'?: Record<string, string> }> };
      const demo = config.hosts[0]!['trust-profiles']?.demo;
      expect(demo).toMatch(/^sha256:/);
      expect(config.agents.map((a) => [a.name, a['trust-context']?.['trust-profile-revision']])).toEqual([['you', demo], ['bob', demo]]);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 120_000);

  it('keeps an edited or broken generated file as FILE.previous, says so on stderr once, and regenerates it', async () => {
    const state = mkdtempSync(join(tmpdir(), 'sy-start-edit-'));
    const notes = (err: string) => err.split('\n').filter((line) => line.startsWith('note: '));
    try {
      const first = await startAndStop(state);
      expect(first.code, first.err).toBe(0);
      expect(notes(first.err)).toEqual([]);
      const workerJson = join(state, 'worker.json');
      const mcpJson = join(state, 'sidecar', 'mcp-servers', 'mcp.json');
      const demoJson = join(state, 'sidecar', 'trust-profiles', 'demo.json');
      const generated = readFileSync(workerJson, 'utf8');
      const edited = JSON.stringify({ ...JSON.parse(generated), 'session-idle-seconds': 60 }, null, 2);
      writeFileSync(workerJson, edited);
      writeFileSync(mcpJson, '{"mcpServers": {');

      const second = await startAndStop(state);
      expect(second.code, second.err).toBe(0);
      expect(notes(second.err)).toEqual([
        `note: ${mcpJson} had changed since start wrote it: your copy is kept as ${mcpJson}.previous, and the file regenerated (start rewrites it on every start; to run an edited config, use switchyard worker and switchyard sidecar, README: "Deploying")`,
        `note: ${workerJson} had changed since start wrote it: your copy is kept as ${workerJson}.previous, and the file regenerated (start rewrites it on every start; to run an edited config, use switchyard worker and switchyard sidecar, README: "Deploying")`,
      ]);
      expect(readFileSync(`${workerJson}.previous`, 'utf8')).toBe(edited);
      expect(readFileSync(`${mcpJson}.previous`, 'utf8')).toBe('{"mcpServers": {');
      expect(readFileSync(workerJson, 'utf8')).toBe(generated);
      expect(JSON.parse(readFileSync(mcpJson, 'utf8'))).toHaveProperty('mcpServers.everything');
      expect(existsSync(`${demoJson}.previous`)).toBe(false);

      // Unedited since: regenerated quietly, and the user's copies stay as they were.
      const third = await startAndStop(state);
      expect(third.code, third.err).toBe(0);
      expect(notes(third.err)).toEqual([]);
      expect(readFileSync(`${workerJson}.previous`, 'utf8')).toBe(edited);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 120_000);
});
