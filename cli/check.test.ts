import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS build script
import { buildWorker } from '../scripts/build.mjs';
import { EDGE_LOCAL_SERVER_MESSAGE } from '../worker/config/config-checks.ts';
import { startWorkerdWorker } from '../test/support/workerd-worker.ts';
import { tokenSha256 } from '../test/support/configs.ts';
import { builtCli, removeBuiltCli } from '../test/support/built-cli.ts';
import { denoBinaryPath } from './deno-binary.ts';

const BIN = join(import.meta.dirname, '..', 'bin', 'switchyard.mjs');
const dir = mkdtempSync(join(tmpdir(), 'switchyard-check-'));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await removeBuiltCli();
});

async function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

// Bundled once: 63 commands from source took a minute and a half of tsx transforms (s23).
const switchyard = async (...args: string[]) => run(process.execPath, [await builtCli(), ...args]);

/** The `path: message` lines of a report, whoever printed it (check, the CLI's error line, the bundle). */
const issueLines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.replace(/^switchyard: /, '').trim())
    // Problem lines, not a report's heading (`SWITCHYARD_WORKER_CONFIG: 1 problem (worker config)`).
    .filter((l) => /^[\w.[\]-]+: /.test(l) && !/^\S+: \d+ problems? \(/.test(l));

function write(name: string, value: unknown): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

describe('switchyard check', () => {
  it('lists every problem of a broken worker config with its path, and exits 1', async () => {
    const file = write('worker.json', {
      agents: [{ name: 'alice', 'token-sha256': 'nothex', servers: ['everything', 'ghost'], colour: 'blue' }],
      hosts: [{ 'entity-id': 'alice-laptop', 'public-key': '00' }],
      servers: {
        everything: { executor: { type: 'user-computer-profile', 'entity-id': 'alice-laptop', target: { type: 'ssh' } } },
        docs: { executor: { type: 'http', url: 'ftp://x' } },
        files: { executor: { type: 'reverse-http', 'entity-id': 'bob-desktop' } },
      },
    });
    const { code, stdout } = await switchyard('check', file);
    expect(code).toBe(1);
    const problems = stdout.split('\n').filter((l) => l.startsWith('  ')).map((l) => l.trim().split(':')[0]);
    expect(problems).toEqual(
      expect.arrayContaining([
        'agents[0].token-sha256',
        'agents[0].colour',
        'hosts[0].public-key',
        'servers.everything.executor.target.type',
        'servers.docs.executor.url',
        'agents[0].servers[1]',
      ]),
    );
    expect(stdout).toMatch(/servers\.files\.executor\.entity-id: .*bob-desktop/);
    expect(stdout).toContain('agents[0].colour: unknown key');
  });

  it('warns of a memory limit a Node server cannot start under, which hung its launch without a word (QA s30)', async () => {
    const low = write('low-memory/sidecar.json', { worker: 'https://yard.example.com', 'entity-id': 'box', limits: { 'memory-limit-mib': 16 } });
    expect(await switchyard('check', low)).toMatchObject({
      code: 0,
      stdout: `${low}: ok (sidecar config, 1 warning)\n  warning: limits.memory-limit-mib: 16 MiB is below the 64 MiB a Node server needs to start: under it one hangs as it starts, and its agent waits out the open deadline\n`,
    });
    for (const mib of [0, 64, 4096]) {
      const fine = write(`memory-${mib}/sidecar.json`, { worker: 'https://yard.example.com', 'entity-id': 'box', limits: { 'memory-limit-mib': mib, 'memory-per-server-mib': mib, 'tasks-per-server': mib } });
      expect(await switchyard('check', fine)).toMatchObject({ code: 0, stdout: `${fine}: ok (sidecar config)\n` });
    }
    // The same of a whole tree's limits: its memory, and its processes and threads.
    const tree = write('low-tree/sidecar.json', { worker: 'https://yard.example.com', 'entity-id': 'box', limits: { 'memory-per-server-mib': 32, 'tasks-per-server': 8, 'cpus-per-server': 0.05, 'memory-per-agent-mib': 48, 'tasks-per-agent': 12 } });
    expect(await switchyard('check', tree)).toMatchObject({
      code: 0,
      stdout: [
        `${tree}: ok (sidecar config, 5 warnings)`,
        '  warning: limits.memory-per-server-mib: 32 MiB is below the 64 MiB a Node server needs to start: under it one hangs as it starts, and its agent waits out the open deadline',
        '  warning: limits.memory-per-agent-mib: 48 MiB is below the 64 MiB a Node server needs to start: under it one hangs as it starts, and its agent waits out the open deadline',
        '  warning: limits.tasks-per-server: 8 is below the 16 processes and threads a Node server needs to start (its own threads take about 12): under it one hangs as it starts, and its agent waits out the open deadline',
        '  warning: limits.tasks-per-agent: 12 is below the 16 processes and threads a Node server needs to start (its own threads take about 12): under it one hangs as it starts, and its agent waits out the open deadline',
        '  warning: limits.cpus-per-server: 0.05 CPU is below the 0.1 a Node server needs to start within seconds: its start, about 0.5 s of CPU, takes 10 s or more under it, and its agent may wait out the open deadline',
        '',
      ].join('\n'),
    });
  });

  it('recognises sidecar.json, mcp.json and trust profiles by content and place', async () => {
    const sidecar = write('cfg/sidecar.json', { worker: 'not a url', 'entity-id': '../up' });
    const servers = write('cfg/mcp-servers/mcp.json', { mcpServers: { 'bad/name': { command: 'x' }, ok: { command: '' } } });
    const profile = write('cfg/trust-profiles/p.json', { 'filesystem-paths': [{ 'source-path': 'relative', 'access-mode': 'rw' }], 'network-capabilities': ['teleport'] });
    const out = (await switchyard('check', sidecar, servers, profile)).stdout;
    expect(out).toContain('(sidecar config)');
    expect(out).toMatch(/  worker: /);
    expect(out).toMatch(/  entity-id: /);
    expect(out).toContain('(mcp.json)');
    expect(out).toMatch(/  mcpServers\.bad\/name: /);
    expect(out).toMatch(/  mcpServers\.ok\.command: /);
    expect(out).toContain('(trust profile)');
    expect(out).toMatch(/  filesystem-paths\[0\]\.source-path: /);
    expect(out).toMatch(/  filesystem-paths\[0\]\.access-mode: /);
    expect(out).toMatch(/  network-capabilities\[0\]: /);
  });

  it('says ok for a valid file and names a file that is not JSON', async () => {
    const valid = write('ok/mcp.json', { mcpServers: { everything: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] } } });
    expect(await switchyard('check', valid)).toMatchObject({ code: 0, stdout: `${valid}: ok (mcp.json)\n` });
    const junk = write('junk.json', '{"agents": [');
    const result = await switchyard('check', junk);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/\(root\): not valid JSON/);
  });

  it('shows both forms of check in the main help, a host dir beside a worker config as the README runs it', async () => {
    const { stdout } = await switchyard('--help');
    expect(stdout).toContain('\n  check [--runtime edge|node|cloudflare] FILE|DIR...\n');
    expect(stdout).toMatch(/\n {2}check worker\.json DIR {2,}\S/);
    expect((await switchyard('check', '--help')).stdout).toContain('\n       switchyard check [--runtime edge|node|cloudflare] worker.json DIR\n');
    // Every agent command the README uses, agent set among them.
    expect(stdout.split('\n').filter((l) => /^ {2}agent \w+/.test(l)).map((l) => l.trim().split(' ').slice(0, 2).join(' '))).toEqual(['agent add', 'agent set', 'agent pin', 'agent remove']);
  });

  it('prints help for every command', async () => {
    for (const command of [[], ['start'], ['worker'], ['sidecar'], ['sidecar', 'profiles'], ['check'], ['doctor']]) {
      const { code, stdout } = await switchyard(...command, '--help');
      expect(code, command.join(' ')).toBe(0);
      expect(stdout).toMatch(/^Usage: switchyard/);
    }
  });
});

describe('switchyard check: each problem in words a person acts on', () => {
  it('names the key a typo meant, says a missing key is required once, and what type a value must be', async () => {
    const worker = write('words/worker.json', {
      agents: [{ name: 'bob', 'token-sha256': 'a'.repeat(64), servers: ['files'], 'max-sesions': 2 }],
      hosts: [{ 'entity-id': 'laptop', 'public-key': `ed25519:${'A'.repeat(43)}` }],
      servers: { files: { executor: { type: 'reverse-http', entity_id: 'laptop' } } },
      'allowed-host': ['yard.example.com'],
      'session-idle-seconds': '900',
    });
    const checked = await switchyard('check', worker);
    expect(checked.code).toBe(1);
    expect(issueLines(checked.stdout)).toEqual([
      'agents[0].max-sesions: unknown key (did you mean "max-sessions"?)',
      'session-idle-seconds: must be a number (got a string)',
      'allowed-host: unknown key (did you mean "allowed-hosts"?)',
      'servers.files.executor.entity_id: unknown key (did you mean "entity-id"?)',
    ]);
    expect((await switchyard('check', write('words/missing.json', { agents: [{ name: 'bob', servers: [] }], servers: {} }))).stdout).toContain('  agents[0].token-sha256: is required\n');

    const sidecar = write('words/cfg/sidecar.json', { worker: 'not a url', 'entity-id': 7, limits: { 'memory-limit-mb': 1 } });
    const mcp = write('words/cfg/mcp-servers/mcp.json', { mcpServers: { files: { comand: 'npx' }, docs: { url: 'docs.example.com/mcp' } } });
    const both = await switchyard('check', sidecar, mcp);
    expect(both.code).toBe(1);
    expect(issueLines(both.stdout)).toEqual([
      'worker: must be an absolute URL',
      'entity-id: must be a string (got a number)',
      'limits.memory-limit-mb: unknown key (did you mean "memory-limit-mib"?)',
      'mcpServers.files.comand: unknown key (did you mean "command"?)',
      'mcpServers.docs.url: must be an absolute URL',
    ]);
  });
});

describe('switchyard check --runtime: a worker config as the runtime it names validates it', () => {
  const agents = [{ name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['echo'] }];
  const localConfig = { agents, servers: { echo: { executor: { type: 'local' } } } };
  const expected = `servers.echo.executor: ${EDGE_LOCAL_SERVER_MESSAGE}`;

  it('rejects a top-level local server on the edge (the default), naming the single-machine mode or a host binding as the fix', async () => {
    const file = write('local/worker.json', localConfig);
    for (const args of [[file], ['--runtime', 'edge', file], ['--runtime', 'deno', file]]) {
      const result = await switchyard('check', ...args);
      expect(result.code, args.join(' ')).toBe(1);
      expect(issueLines(result.stdout)).toEqual([expected]);
    }
    expect(expected).toContain('switchyard worker --runtime node');
    expect(expected).not.toContain('switchyard start');
  });

  it('accepts it with --runtime node, exactly as switchyard worker --runtime node does, and rejects with both what both reject', async () => {
    const file = write('local-ok/worker.json', localConfig);
    // Its folder, where the single-machine mode reads local servers, defines the one it binds.
    write('local-ok/mcp-servers/mcp.json', { mcpServers: { echo: { command: process.execPath } } });
    write('local-ok/sidecar.json', { 'allow-uncontained': true });
    const ok = await switchyard('check', '--runtime', 'node', file);
    expect(ok.stdout).toMatch(new RegExp(`^${file}: ok \\(worker config\\)\n`));
    expect(ok.code).toBe(0);

    const broken = write('local-broken/worker.json', { agents, servers: { echo: { executor: { type: 'local' } }, files: { executor: { type: 'reverse-http', 'entity-id': 'nowhere' } } } });
    const checked = await switchyard('check', '--runtime', 'node', broken);
    expect(checked.code).toBe(1);
    expect(issueLines(checked.stdout)).toEqual(['servers.files.executor.entity-id: unknown host "nowhere": add it to "hosts"']);
    const worker = await switchyard('worker', '--runtime', 'node', '--config', broken, '--port', '0');
    expect(worker.code).toBe(1);
    expect(issueLines(worker.stderr)).toEqual(issueLines(checked.stdout));
  });

  it('gives the same message as switchyard worker under Deno and as the deployed bundle under deno serve', async () => {
    const file = write('local-deno/worker.json', localConfig);
    const cli = await switchyard('worker', '--config', file, '--port', '0');
    expect(cli.code).toBe(1);
    expect(issueLines(cli.stderr)).toEqual([expected]);

    const bundle = join(dir, 'worker.js');
    await buildWorker({ outfile: bundle });
    const served = await run(denoBinaryPath(), ['serve', '--allow-env', '--allow-net', '--host', '127.0.0.1', '--port', '0', bundle], {
      SWITCHYARD_WORKER_CONFIG: JSON.stringify(localConfig),
      NO_COLOR: '1',
    });
    expect(served.code).toBe(2);
    expect(issueLines(served.stderr)).toEqual([expected]);
  }, 60_000);
});

describe('switchyard check piped into a reader that leaves early (`check … | head -1`)', () => {
  it('ends as it would have, without an EPIPE stack (review s22)', async () => {
    const files = Array.from({ length: 60 }, (_, i) => write(`epipe/${i}.json`, { agents: [], servers: {} }));
    const child = spawn(process.execPath, [BIN, 'check', ...files], { env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // The reader takes one chunk and goes, as head does.
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stderr).not.toContain('EPIPE');
    expect(code).toBe(0);
  });
});

describe('switchyard check --runtime cloudflare: what the Workers bundle takes', () => {
  const agent = (i: number) => ({ name: `agent-${String(i).padStart(2, '0')}`, 'token-sha256': tokenSha256(`token-${i}`), servers: [] });
  const sized = (count: number) => ({ agents: Array.from({ length: count }, (_, i) => agent(i)), hosts: [], servers: {}, 'public-url': 'https://sy.example.workers.dev' });

  it('refuses what the bundle refuses under workerd, in its words, where edge passes it', async () => {
    const config = { agents: [], hosts: [], servers: {}, audit: { file: 'audit.jsonl' } };
    const file = write('cloudflare-audit/worker.json', config);
    expect(await switchyard('check', file)).toMatchObject({ code: 0 });
    const checked = await switchyard('check', '--runtime', 'cloudflare', file);
    expect(checked.code).toBe(1);
    expect(issueLines(checked.stdout)).toEqual([expect.stringMatching(/^audit\.file: Workers have no file system/)]);

    const worker = await startWorkerdWorker(config);
    try {
      await fetch(`${worker.url}/healthz`).then((r) => r.text());
      await expect.poll(() => issueLines(worker.errorLines().join('\n'))).toEqual(issueLines(checked.stdout));
    } finally {
      await worker.stop();
    }
  }, 60_000);

  it('warns of a config a deployed worker would refuse every request under: no public-url, only loopback hosts (review s22)', async () => {
    const bare = write('cloudflare-bare/worker.json', { agents: [], servers: {} });
    expect(await switchyard('check', '--runtime', 'cloudflare', bare)).toMatchObject({ code: 0, stdout: expect.stringContaining(`${bare}: ok (worker config, 1 warning)\n  warning: public-url: is not set, and "allowed-hosts" names only loopback`) });
    const named = write('cloudflare-named/worker.json', { agents: [], servers: {}, 'allowed-hosts': ['switchyard.example.com'] });
    expect(await switchyard('check', '--runtime', 'cloudflare', named)).toMatchObject({ code: 0, stdout: `${named}: ok (worker config)\n` });
  });

  it('warns of a plain-http public-url off this machine on every runtime, and takes the config (walk s25)', async () => {
    const lan = write('http-lan/worker.json', { agents: [], servers: {}, 'public-url': 'http://yard.lan:8787' });
    for (const runtime of ['edge', 'node', 'cloudflare']) {
      expect(await switchyard('check', '--runtime', runtime, lan)).toMatchObject({ code: 0, stdout: expect.stringContaining(`${lan}: ok (worker config, 1 warning)\n  warning: public-url: is plain http off this machine: agents send their bearer tokens`) });
    }
    const loopback = write('http-loopback/worker.json', { agents: [], servers: {}, 'public-url': 'http://127.0.0.1:8787' });
    expect(await switchyard('check', loopback)).toMatchObject({ code: 0, stdout: `${loopback}: ok (worker config)\n` });
  });

  it('says the Workers refusals beside the edge problems, not only once those are fixed (review s22)', async () => {
    const file = write('cloudflare-both/worker.json', { agents: [], hosts: [], servers: {}, 'session-idle-seconds': 0, audit: { file: 'audit.jsonl' } });
    const checked = await switchyard('check', '--runtime', 'cloudflare', file);
    expect(checked.code).toBe(1);
    expect(issueLines(checked.stdout)).toEqual([expect.stringMatching(/^session-idle-seconds: /), expect.stringMatching(/^audit\.file: Workers have no file system/)]);
  });

  it('refuses a config larger than a secret holds, counted as minified JSON, and passes one that fits only minified', async () => {
    // Pretty-printed, as host add and agent add write it, over the limit; minified, under it.
    let fits = 1;
    while (JSON.stringify(sized(fits + 1)).length <= 5120) fits += 1;
    expect(JSON.stringify(sized(fits), null, 2).length).toBeGreaterThan(5120);
    const ok = write('cloudflare-size/fits.json', JSON.stringify(sized(fits), null, 2));
    expect(await switchyard('check', '--runtime', 'cloudflare', ok)).toMatchObject({ code: 0, stdout: `${ok}: ok (worker config)\n` });

    const big = write('cloudflare-size/worker.json', JSON.stringify(sized(fits + 1), null, 2));
    const bytes = JSON.stringify(sized(fits + 1)).length;
    const checked = await switchyard('check', '--runtime', 'cloudflare', big);
    expect(checked.code).toBe(1);
    expect(checked.stdout.split('\n').slice(1).map((l) => l.trim()).filter((l) => l !== '')).toEqual([`(root): ${bytes.toLocaleString('en-US')} bytes as minified JSON, more than a Workers secret holds (5,120 bytes): remove agents, hosts or servers, or shorten their names`]);
    // Not a limit of the other runtimes, which read a file.
    expect(await switchyard('check', big)).toMatchObject({ code: 0 });
  });

  it('refuses an audit.file whose folder is not there, in the worker config and in sidecar.json, as their starts would (review s25)', async () => {
    const worker = write('audit-folder/worker.json', { agents: [], hosts: [], servers: {}, audit: { file: 'logs/audit.jsonl' } });
    expect(await switchyard('check', worker)).toMatchObject({
      code: 1,
      stdout: `${worker}: 1 problem (worker config)\n  audit.file: the folder "${join(dir, 'audit-folder', 'logs')}" does not exist, so the start would refuse to open "${join(dir, 'audit-folder', 'logs', 'audit.jsonl')}": create the folder\n`,
    });
    const sidecar = write('audit-folder/cfg/sidecar.json', { worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop', audit: { file: '/nonexistent-s25/audit.jsonl' } });
    expect(await switchyard('check', sidecar)).toMatchObject({ code: 1, stdout: expect.stringContaining(`  audit.file: the folder "/nonexistent-s25" does not exist`) });
    mkdirSync(join(dir, 'audit-folder', 'logs'));
    expect(await switchyard('check', worker)).toMatchObject({ code: 0, stdout: `${worker}: ok (worker config)\n` });
  });

  it('warns that link-on-loopback does nothing on Workers, with what to do under wrangler dev', async () => {
    const file = write('cloudflare-loopback/worker.json', { ...sized(1), 'public-url': 'https://switchyard.example.workers.dev', 'link-on-loopback': true });
    expect(await switchyard('check', file)).toMatchObject({ code: 0, stdout: `${file}: ok (worker config)\n` });
    expect(await switchyard('check', '--runtime', 'cloudflare', file)).toMatchObject({
      code: 0,
      stdout: `${file}: ok (worker config, 1 warning)\n  warning: link-on-loopback: does nothing on Workers: a sidecar links at "public-url" only; under wrangler dev, set "public-url" to the local URL the sidecar dials (e.g. http://127.0.0.1:8787) in the config it runs with\n`,
    });
  });

  it('names cloudflare among the runtimes it knows', async () => {
    const file = write('cloudflare-usage/worker.json', sized(1));
    const result = await switchyard('check', '--runtime', 'workers', file);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('Unknown runtime "workers": expected edge (the default, also for deno), node or cloudflare');
  });
});

describe('switchyard check on a file it cannot use as JSON', () => {
  it('says a missing file is not found, in plain words, and exits 1', async () => {
    const missing = join(dir, 'nonexistent.json');
    expect(await switchyard('check', missing)).toMatchObject({ code: 1, stdout: `${missing}: not found\n` });
  });

  it('places a syntax error at its line and column, in the words of the worker\'s own log under Deno', async () => {
    const file = write('syntax/worker.json', '{\n  "agents": [],\n  servers: {}\n}\n');
    const checked = await switchyard('check', file);
    expect(checked.code).toBe(1);
    const problem = (text: string) => text.split('\n').find((l) => l.includes('(root): '))?.trim();
    expect(problem(checked.stdout)).toBe('(root): not valid JSON: Expected double-quoted property name in JSON at position 20 (line 3 column 3)');
    const worker = await run(denoBinaryPath(), ['run', '--allow-env', '--allow-read', '--allow-net', join(import.meta.dirname, '..', 'worker', 'adapters', 'deno', 'deno-worker.ts')], {
      SWITCHYARD_WORKER_CONFIG_FILE: file,
      PORT: '0',
      NO_COLOR: '1',
    });
    expect(worker.code).toBe(2);
    expect(problem(worker.stderr)).toBe(problem(checked.stdout));
    const cli = await switchyard('worker', '--config', file, '--port', '0');
    expect(problem(cli.stderr)).toBe(problem(checked.stdout));
  }, 60_000);
});

describe('switchyard check on an mcp.json', () => {
  it('warns, without failing, about a server that would expose the sidecar config dir inside a sandbox', async () => {
    const script = write('cfg/server.mjs', '');
    const file = write('cfg/mcp-servers/mcp.json', {
      mcpServers: {
        here: { command: process.execPath, args: [script], cwd: '.' },
        elsewhere: { command: process.execPath, args: ['/opt/mcp/server.mjs'], cwd: '/tmp' },
      },
    });
    const { code, stdout } = await switchyard('check', file);
    expect(code).toBe(0);
    const warnings = stdout.split('\n').filter((l) => l.trim().startsWith('warning: ')).map((l) => l.trim().slice('warning: '.length).split(':')[0]);
    expect(warnings.sort()).toEqual(['mcpServers.here.args', 'mcpServers.here.cwd']);
    expect(stdout).toContain(`${file}: ok (mcp.json, 2 warnings)`);
  });

  it('refuses a server name with "__" as the worker config does, in the same words', async () => {
    const file = write('namespace/mcp-servers/mcp.json', { mcpServers: { a__b: { command: 'npx' } } });
    const checked = await switchyard('check', file);
    expect(checked.code).toBe(1);
    const worker = write('namespace/worker.json', { agents: [], servers: { a__b: { executor: { type: 'http', url: 'https://example.com/mcp' } } } });
    const refused = issueLines((await switchyard('check', worker)).stdout);
    expect(refused).toEqual([expect.stringMatching(/^servers\.a__b: /)]);
    expect(issueLines(checked.stdout)).toEqual([refused[0]!.replace('servers.a__b', 'mcpServers.a__b')]);
  });

  it('resolves a user or machine mcp.json against the config dir above it, as the sidecar does', async () => {
    const { configDirOfMcpFile } = await import('./check.ts');
    expect(configDirOfMcpFile('/c/mcp-servers/mcp.json')).toBe('/c');
    expect(configDirOfMcpFile('/c/users/alice/mcp-servers/mcp.json')).toBe('/c');
    expect(configDirOfMcpFile('/c/machines/laptop/mcp-servers/mcp.json')).toBe('/c');
    expect(configDirOfMcpFile('/elsewhere/mcp.json')).toBe('/');
  });
});

describe('switchyard check DIR: a sidecar config dir checked whole', () => {
  it('names a trust profile file whose name is no profile name as the name\'s problem, not a key\'s', async () => {
    write('badname/sidecar.json', { worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' });
    const file = write('badname/trust-profiles/my profile.json', { 'network-capabilities': [] });
    const checked = await switchyard('check', join(dir, 'badname'));
    expect(checked.code).toBe(1);
    expect(checked.stdout).toContain(`${file}: 1 problem (trust profile)\n  (file name): "my profile" names the profile, and a profile's name must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit: rename the file\n`);
  });

  it('checks the host key as the sidecar\'s start reads it: not a key, a folder, readable by others; one not there yet is not judged', async () => {
    const root = join(dir, 'keyed');
    write('keyed/sidecar.json', { worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' });
    const key = join(root, 'host.key');
    const sidecar = join(root, 'sidecar.json');
    expect(await switchyard('check', root)).toMatchObject({ code: 0 });
    for (const [make, problem] of [
      [() => writeFileSync(key, 'garbage', { mode: 0o600 }), `key-file: Host key "${key}"`],
      [() => writeFileSync(key, 'garbage', { mode: 0o644 }), `key-file: Host key "${key}" is readable by other users: run chmod 600 "${key}"`],
      [() => writeFileSync(key, 'garbage', { mode: 0o640 }), `key-file: Host key "${key}" is readable by its group: run chmod 600 "${key}"`],
      [() => mkdirSync(key), `key-file: Cannot read the host key "${key}"`],
    ] as const) {
      rmSync(key, { recursive: true, force: true });
      make();
      const checked = await switchyard('check', root);
      expect(checked.code, problem).toBe(1);
      expect(checked.stdout).toContain(`${sidecar}: 1 problem (sidecar config)\n  ${problem}`);
    }
    rmSync(key, { recursive: true, force: true });
  });

  it('checks every file of the dir and the trust profiles they name, reporting each problem on the file that names it', async () => {
    const root = join(dir, 'whole');
    write('whole/sidecar.json', { worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop', 'trust-profile': 'floor' });
    write('whole/mcp-servers/mcp.json', { mcpServers: { files: { command: 'npx', 'trust-profile': 'ghost' }, docs: { url: 'https://docs.example.com/mcp', 'trust-profile': 'floor' } } });
    write('whole/users/alice/mcp-servers/mcp.json', { mcpServers: { 'bad/name': { command: 'x' } } });
    write('whole/machines/laptop/mcp-servers/mcp.json', { mcpServers: { memory: { command: 'npx' } } });
    write('whole/trust-profiles/floor.json', { 'base-trust-profiles': ['org'], 'network-capabilities': [] });
    write('whole/trust-profiles/org.json', { 'network-capabilities': ['teleport'] });
    const { code, stdout } = await switchyard('check', root);
    expect(code).toBe(1);
    expect(stdout).toContain(`${join(root, 'mcp-servers', 'mcp.json')}: 2 problems (mcp.json)\n  mcpServers.files.trust-profile: no trust profile "ghost" in trust-profiles/: add trust-profiles/ghost.json or fix the name\n`);
    expect(stdout).toMatch(/\n {2}mcpServers\.docs\.trust-profile: trust profile "floor" cannot be used: Invalid trust profile "org": network-capabilities\[0\]: /);
    expect(stdout).toMatch(/users\/alice\/mcp-servers\/mcp\.json: 1 problem \(mcp\.json\)\n {2}mcpServers\.bad\/name: /);
    expect(stdout).toContain(`${join(root, 'machines', 'laptop', 'mcp-servers', 'mcp.json')}: ok (mcp.json)`);
    expect(stdout).toMatch(/trust-profiles\/org\.json: 1 problem \(trust profile\)\n {2}network-capabilities\[0\]: /);
    // floor.json is valid on its own; its base is not, so it and everything naming it cannot be used.
    expect(stdout).toMatch(/sidecar\.json: 1 problem \(sidecar config\)\n {2}trust-profile: trust profile "floor" cannot be used: /);
    expect(stdout).toMatch(/trust-profiles\/floor\.json: 1 problem \(trust profile\)\n {2}base-trust-profiles: /);

    write('whole/trust-profiles/org.json', { 'network-capabilities': [] });
    write('whole/trust-profiles/ghost.json', { 'network-capabilities': [] });
    write('whole/users/alice/mcp-servers/mcp.json', { mcpServers: { good: { command: 'x' } } });
    const fixed = await switchyard('check', root);
    expect(fixed.stdout.trim().split('\n').every((line) => line.endsWith(')') && line.includes(': ok ('))).toBe(true);
    expect(fixed.code).toBe(0);
  });

  it('reports a dir without sidecar.json, and a sidecar refuses a broken sidecar.json naming the file exactly as check does', async () => {
    const root = join(dir, 'broken-sidecar');
    mkdirSync(root, { recursive: true });
    expect((await switchyard('check', root)).stdout).toContain(`${join(root, 'sidecar.json')}: not found\n`);
    write('broken-sidecar/sidecar.json', { worker: 'http://yard.example.com', 'entity-id': 'a b', extra: 1 });
    const checked = await switchyard('check', join(root, 'sidecar.json'));
    const sidecar = await switchyard('sidecar', '--config-dir', root);
    expect(sidecar.code).toBe(1);
    expect(checked.stdout).toMatch(/^\/.*sidecar\.json: 3 problems \(sidecar config\)\n/);
    expect(sidecar.stderr).toBe(`switchyard: ${checked.stdout}`);
    write('broken-sidecar/sidecar.json', '{"worker": ');
    const unparsable = await switchyard('sidecar', '--config-dir', root);
    expect(unparsable.stderr).toBe(`switchyard: ${(await switchyard('check', join(root, 'sidecar.json'))).stdout}`);
    write('broken-sidecar/sidecar.json', '{\n  "worker": "http://127.0.0.1:8787",\n}');
    const misplaced = await switchyard('check', join(root, 'sidecar.json'));
    expect(misplaced.stdout).toContain('at position 39 (line 3 column 1)');
    expect((await switchyard('sidecar', '--config-dir', root)).stderr).toBe(`switchyard: ${misplaced.stdout}`);
  });
  it('checks a dir as the sidecar given --worker and --entity-id reads it, across files too (their keys left out of sidecar.json)', async () => {
    const { hostCredential, workerHostEntry, writeSidecarDir } = await import('../test/support/configs.ts');
    const host = hostCredential('desk');
    const root = join(dir, 'flags');
    writeSidecarDir(root, { worker: 'http://127.0.0.1:8787', host, servers: { files: { command: 'npx' } } });
    const file = join(root, 'sidecar.json');
    const { readFileSync } = await import('node:fs');
    const { worker: _, 'entity-id': __, ...rest } = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify(rest));
    const bare = await switchyard('check', root);
    expect(bare.code).toBe(1);
    expect(bare.stdout).toContain(`${file}: 2 problems (sidecar config)\n`);
    const flagged = await switchyard('check', '--worker', 'http://127.0.0.1:8787', '--entity-id', 'desk', root);
    expect(flagged.stdout).toContain(`${file}: ok (sidecar config)`);
    expect(flagged.code).toBe(0);
    const badFlag = await switchyard('check', '--worker', 'ftp://yard', '--entity-id', 'desk', root);
    expect(badFlag.code).toBe(1);
    // The flag's problem, not the file's (QA s29: the file was blamed for what the flag said).
    expect(badFlag.stderr).toContain('--worker: must be an http(s): or ws(s): URL');
    expect(badFlag.stdout).not.toContain('sidecar.json: 1 problem');
    const worker = write('flags-worker/worker.json', { agents: [], hosts: [workerHostEntry(host)], servers: { files: { executor: { type: 'reverse-http', 'entity-id': 'desk' } } } });
    const across = await switchyard('check', '--worker', 'http://127.0.0.1:8787', '--entity-id', 'desk', worker, root);
    expect(across.stdout).toContain(`${worker} × ${root}: ok (across files)`);
    expect(across.code).toBe(0);
  });
});

describe('switchyard check worker.json DIR: a worker config against the host dir it routes to', () => {
  it('catches an unlisted entity id or key, a server the host does not define, and a stale revision; passes once they agree', async () => {
    const { hostCredential, workerHostEntry, writeSidecarDir } = await import('../test/support/configs.ts');
    const { TrustProfileStore } = await import('../sidecar/trust/profile-store.ts');
    const host = hostCredential('laptop');
    const root = join(dir, 'across');
    writeSidecarDir(root, { worker: 'http://127.0.0.1:8787', host, servers: { files: { command: 'npx' } }, profiles: { workspace: { 'network-capabilities': [] } } });
    const revision = (await new TrustProfileStore(join(root, 'trust-profiles')).load('workspace')).revision;
    const config = (hosts: unknown[], pinned: string) => ({
      agents: [{ name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['files', 'memory'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': pinned } }],
      hosts,
      servers: {
        files: { executor: { type: 'reverse-http', 'entity-id': 'laptop' } },
        memory: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } } },
      },
    });
    const stale = `sha256:${'0'.repeat(64)}`;
    const desk = hostCredential('desk');
    const elsewhere = write('across-1/worker.json', { agents: [], hosts: [workerHostEntry(desk)], servers: { notes: { executor: { type: 'reverse-http', 'entity-id': 'desk' } } } });
    const first = await switchyard('check', elsewhere, root);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain(`${join(root, 'sidecar.json')}: 1 problem (across files, with ${elsewhere})\n  entity-id: the worker config has no host "laptop" under "hosts": add this host with the line \`sidecar host-entry\` prints on that host (switchyard host add)`);

    const drifted = write('across-2/worker.json', config([workerHostEntry(hostCredential('laptop'))], stale));
    const second = await switchyard('check', drifted, root);
    expect(second.code).toBe(1);
    expect(second.stdout).toContain(`  key-file: this host's key is not the one the worker config lists for "laptop": set its "public-key" to ${host.publicKey}`);
    expect(second.stdout).toContain(`  servers.memory.executor: host "laptop" defines no server "memory" in ${join(root, 'mcp-servers', 'mcp.json')}`);
    expect(second.stdout).toContain(`  agents[0].trust-context.trust-profile-revision: host "laptop" has trust profile "workspace" at ${revision}: the agent would be refused (trust-profile-stale)`);
    expect(second.stdout).not.toMatch(/servers\.files\.executor: /);

    write('across/mcp-servers/mcp.json', { mcpServers: { files: { command: 'npx' }, memory: { command: 'npx' } } });
    const agreed = write('across-3/worker.json', config([workerHostEntry(host)], revision));
    const ok = await switchyard('check', agreed, root);
    expect(ok.stdout).toContain(`${agreed} × ${root}: ok (across files)`);
    expect(ok.code).toBe(0);
  });

  it('says a worker config and a dir whose sidecar.json cannot be read were not checked across, not that they agree (review s22)', async () => {
    const root = join(dir, 'across-unread');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'sidecar.json'), JSON.stringify({ 'trust-profile': 'ro' }));
    const file = write('across-unread-worker/worker.json', { agents: [], servers: {} });
    const result = await switchyard('check', file, root);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${file} × ${root}: not checked across files (${join(root, 'sidecar.json')} has problems, above)`);
    expect(result.stdout).not.toContain('ok (across files)');
  });

  it('catches an agent with no trust profile whose server a host with no floor and no allow-uncontained will always refuse', async () => {
    const { hostCredential, workerHostEntry, writeSidecarDir } = await import('../test/support/configs.ts');
    const host = hostCredential('laptop');
    const root = join(dir, 'uncontained');
    // As sidecar init writes it: no floor, no allow-uncontained.
    const sidecar = (keys: Record<string, unknown>) => {
      writeSidecarDir(root, { worker: 'http://127.0.0.1:8787', host, profiles: { floor: { 'network-capabilities': [] } }, sidecar: { 'allow-uncontained': false, ...keys } });
      write('uncontained/mcp-servers/mcp.json', { mcpServers: { mem: { command: 'npx' }, own: { command: 'npx', 'trust-profile': 'floor' } } });
    };
    sidecar({});
    const file = write('uncontained/worker.json', {
      agents: [
        { name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['docs'] },
        { name: 'bob', 'token-sha256': 'b'.repeat(64), servers: ['own', 'mem'] },
      ],
      hosts: [workerHostEntry(host)],
      servers: {
        mem: { executor: { type: 'reverse-http', 'entity-id': 'laptop' } },
        own: { executor: { type: 'reverse-http', 'entity-id': 'laptop' } },
        docs: { executor: { type: 'http', url: 'https://docs.example.com/mcp' } },
      },
    });
    const refused = await switchyard('check', file, root);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(
      `${file}: 1 problem (across files, with ${root})\n  agents[1].servers[1]: server "mem" on host "laptop" will be refused for agent "bob" (denied-by-policy): the agent names no trust profile, and the host has no trust floor and no "allow-uncontained"; give the agent a "trust-context", or on the host set "trust-profile" in sidecar.json (or in "mem"'s mcp.json entry) or "allow-uncontained": true\n`,
    );
    for (const keys of [{ 'trust-profile': 'floor' }, { 'allow-uncontained': true }]) {
      sidecar(keys);
      const ok = await switchyard('check', file, root);
      expect(ok.stdout, JSON.stringify(keys)).toContain(`${file} × ${root}: ok (across files)`);
      expect(ok.code).toBe(0);
    }
  });
});

describe('switchyard check DIR: what of a profile its restrictive base drops or narrows', () => {
  it('warns on the child\'s file of each name it inherits or sets that the base does not pass, and stays ok (review s23: the README\'s own example set one)', async () => {
    const root = join(dir, 'env-dropped');
    write('env-dropped/sidecar.json', { worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' });
    write('env-dropped/trust-profiles/base.json', { 'network-capabilities': [], environment: { inherit: ['PATH', 'LANG'] } });
    write('env-dropped/trust-profiles/workspace.json', {
      'base-trust-profiles': [{ profile: 'base', 'inheritance-mode': 'restrictive' }],
      'network-capabilities': [],
      environment: { inherit: ['PATH', 'LANG'], set: { NODE_ENV: 'production' } },
    });
    const dropped = await switchyard('check', root);
    expect(dropped.stdout).toContain(`${join(root, 'trust-profiles', 'workspace.json')}: ok (trust profile, 1 warning)\n  warning: environment.set.NODE_ENV: "NODE_ENV" is not set: a restrictive base does not pass it (add it to that base's "inherit")\n`);
    expect(dropped.code).toBe(0);
    write('env-dropped/trust-profiles/base.json', { 'network-capabilities': [], environment: { inherit: ['PATH', 'LANG', 'NODE_ENV'] } });
    expect((await switchyard('check', root)).stdout).not.toContain('warning');
  });

  it('warns as well of a read-write grant the base makes read-only, and of network it cuts (review s24: the README says so, check said nothing)', async () => {
    const root = join(dir, 'grant-narrowed');
    write('grant-narrowed/sidecar.json', { worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' });
    // Folders that exist here: a grant of one that does not is a warning of its own.
    const srv = join(dir, 'grant-narrowed-srv');
    mkdirSync(join(srv, 'project'), { recursive: true });
    write('grant-narrowed/trust-profiles/base.json', { 'filesystem-paths': [{ 'source-path': srv, 'access-mode': 'read-only' }], 'network-capabilities': [] });
    write('grant-narrowed/trust-profiles/child.json', {
      'base-trust-profiles': [{ profile: 'base', 'inheritance-mode': 'restrictive' }],
      'filesystem-paths': [{ 'source-path': join(srv, 'project'), 'access-mode': 'read-write' }],
      'network-capabilities': ['internet-client'],
    });
    const narrowed = await switchyard('check', root);
    expect(narrowed.stdout).toContain(
      `${join(root, 'trust-profiles', 'child.json')}: ok (trust profile, 2 warnings)\n` +
        `  warning: filesystem-paths: "${join(srv, 'project')}" is read-only: a restrictive base grants it read-only (make that base's grant "read-write")\n` +
        '  warning: network-capabilities: "internet-client" is cut to no network: a restrictive base allows no more (widen that base\'s "network-capabilities")\n',
    );
    expect(narrowed.code).toBe(0);
  });
});

describe('switchyard check: a trust profile\'s grants as a launch here opens them (QA s30: it said ok of grants every launch refuses)', () => {
  it('warns of a grant that is a symlink, goes through one, or is not there yet, and stays ok', async () => {
    const real = join(dir, 'grants-here', 'real');
    mkdirSync(real, { recursive: true });
    symlinkSync(real, join(dir, 'grants-here', 'link'));
    const grants = [real, join(dir, 'grants-here', 'link'), join(dir, 'grants-here', 'link', 'inside'), join(dir, 'grants-here', 'later')];
    mkdirSync(join(real, 'inside'));
    const profile = write('grants-here/cfg/trust-profiles/p.json', { 'filesystem-paths': grants.map((p) => ({ 'source-path': p, 'access-mode': 'read-only' })) });
    const checked = await switchyard('check', profile);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toBe(
      `${profile}: ok (trust profile, 3 warnings)\n` +
        '  warning: filesystem-paths[1].source-path: is a symlink: every contained launch under this profile is refused (launch-failed); name the real path in the profile\n' +
        `  warning: filesystem-paths[2].source-path: resolves to "${join(real, 'inside')}": every contained launch under this profile is refused (launch-failed); name the real path in the profile\n` +
        '  warning: filesystem-paths[3].source-path: does not exist on this machine: every contained launch under this profile is refused (launch-failed) until it does\n',
    );
  });
});

describe('switchyard check: a trust profile whose grants contain or lie in the config dir', () => {
  // The README's layout: the config dir at ~/.config/switchyard, and a profile granting the home around it.
  const setUp = async (name: string, spec: { sidecar?: Record<string, unknown>; floors?: Record<string, string> } = {}) => {
    const { hostCredential, workerHostEntry, writeSidecarDir } = await import('../test/support/configs.ts');
    const { TrustProfileStore } = await import('../sidecar/trust/profile-store.ts');
    const home = join(dir, name);
    const configDir = join(home, '.config', 'switchyard');
    const host = hostCredential('laptop');
    const server = { command: process.execPath, args: [join(home, 'project', 'server.mjs')] };
    writeSidecarDir(configDir, {
      worker: 'http://127.0.0.1:8787',
      host,
      servers: spec.floors === undefined ? { files: server } : Object.fromEntries(Object.entries(spec.floors).map(([name, floor]) => [name, { ...server, 'trust-profile': floor }])),
      profiles: {
        home: { 'filesystem-paths': [{ 'source-path': home, 'access-mode': 'read-only' }], 'network-capabilities': [] },
        workspace: { 'filesystem-paths': [{ 'source-path': join(home, 'project'), 'access-mode': 'read-write' }], 'network-capabilities': [] },
      },
      sidecar: { 'allow-uncontained': false, ...(spec.sidecar ?? { 'trust-profile': 'home' }) },
    });
    const store = new TrustProfileStore(join(configDir, 'trust-profiles'));
    const pin = async (ref: string) => ({ 'trust-profile-ref': ref, 'trust-profile-revision': (await store.load(ref)).revision });
    return { home, configDir, host: workerHostEntry(host), pin };
  };

  it('check DIR warns, on the file that names it, about a floor that grants the home around the config dir: an agent that names no narrower profile is refused under it', async () => {
    const { home, configDir } = await setUp('home-floor');
    const { code, stdout } = await switchyard('check', configDir);
    expect(stdout).toContain(
      `${join(configDir, 'sidecar.json')}: ok (sidecar config, 1 warning)\n  warning: trust-profile: trust profile "home" grants "${home}", which contains the sidecar config dir (${configDir}, which holds the host key), ` +
        'and an agent that names no trust profile runs under this floor alone and is refused (launch-failed), while one whose own profile grants narrower paths runs; grant narrower paths in the profile, or move the config dir out of the granted tree\n',
    );
    expect(stdout).toContain(`${join(configDir, 'mcp-servers', 'mcp.json')}: ok (mcp.json)\n`);
    expect(code).toBe(0);
  });

  it('check DIR warns of a floor that grants the folder of a key-file kept outside the config dir, and of a key-file every sandbox would show (review s24)', async () => {
    const keyFile = join(dir, 'key-outside', 'project', '.keys', 'host.key');
    const { home, configDir } = await setUp('key-outside', { sidecar: { 'trust-profile': 'workspace', 'key-file': keyFile } });
    const granted = await switchyard('check', configDir);
    expect(granted.stdout).toContain(
      `  warning: trust-profile: trust profile "workspace" grants "${join(home, 'project')}", which contains the host key file (key-file: ${keyFile}), and an agent that names no trust profile`,
    );
    expect(granted.code).toBe(0);
    const { configDir: underUsr } = await setUp('key-under-usr', { sidecar: { 'trust-profile': 'workspace', 'key-file': '/usr/share/switchyard-review-s24/host.key' } });
    const shown = await switchyard('check', underUsr);
    expect(shown.stdout).toContain(
      `${join(underUsr, 'sidecar.json')}: ok (sidecar config, 1 warning)\n  warning: (root): the host key file (key-file: /usr/share/switchyard-review-s24/host.key) lies in "/usr", which every sandbox shows read-only: every contained launch is refused (launch-failed); move the key file out of those folders\n`,
    );
    expect(shown.code).toBe(0);
  });

  it('check DIR warns of a server whose working directory holds a key-file kept outside the config dir (review s24)', async () => {
    const keys = join(dir, 'key-cwd', 'keys');
    mkdirSync(keys, { recursive: true });
    const { configDir } = await setUp('key-cwd', { sidecar: { 'trust-profile': 'workspace', 'key-file': join(keys, 'host.key') } });
    write('key-cwd/.config/switchyard/mcp-servers/mcp.json', { mcpServers: { files: { command: process.execPath, args: ['-e', ''], cwd: keys } } });
    const { stdout } = await switchyard('check', configDir);
    expect(stdout).toContain(`  warning: mcpServers.files.cwd: a contained launch is refused: its working directory would expose the host key file (key-file) inside the sandbox ("${keys}"); give the server an absolute "cwd" outside the key file's folder`);
  });

  it('check DIR warns about a server\'s own floor in its mcp.json entry the same way', async () => {
    const { configDir } = await setUp('home-server-floor', { sidecar: {}, floors: { files: 'home', other: 'workspace' } });
    const { code, stdout } = await switchyard('check', configDir);
    expect(stdout).toContain(`${join(configDir, 'mcp-servers', 'mcp.json')}: ok (mcp.json, 1 warning)\n  warning: mcpServers.files.trust-profile: trust profile "home" grants `);
    expect(stdout).toContain(`${join(configDir, 'sidecar.json')}: ok (sidecar config)\n`);
    expect(code).toBe(0);
  });

  it('check worker.json DIR fails each agent whose every launch of a server there is refused: one pinning that profile, and one naming none under that floor', async () => {
    const { home, configDir, host, pin } = await setUp('home-pinned');
    const file = write('home-pinned/worker.json', {
      agents: [
        { name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['files'], 'trust-context': await pin('home') },
        // home ∧ workspace grants the project only: bob's launches are fine.
        { name: 'bob', 'token-sha256': 'b'.repeat(64), servers: ['files'], 'trust-context': await pin('workspace') },
        { name: 'carol', 'token-sha256': 'c'.repeat(64), servers: ['docs', 'files'] },
      ],
      hosts: [host],
      servers: { files: { executor: { type: 'reverse-http', 'entity-id': 'laptop' } }, docs: { executor: { type: 'http', url: 'https://docs.example.com/mcp' } } },
    });
    const { code, stdout } = await switchyard('check', file, configDir);
    expect(code).toBe(1);
    expect(stdout).toContain(`${file}: 2 problems (across files, with ${configDir})\n`);
    expect(stdout).toContain(
      `  agents[0].servers[0]: server "files" on host "laptop" cannot start for agent "alice" (launch-failed): the trust profile it runs under ("home", pinned by the agent, under the host's floor "home") grants "${home}", which contains the sidecar config dir (${configDir}, which holds the host key), and a contained launch that would show any of it is refused; grant narrower paths in the profile, or move the config dir out of the granted tree\n`,
    );
    expect(stdout).toContain('  agents[2].servers[1]: server "files" on host "laptop" cannot start for agent "carol" (launch-failed): the trust profile it runs under (the host\'s floor "home"; the agent names none) grants ');
    expect(stdout).not.toContain('agents[1]');
  });
});

describe('switchyard check --runtime node worker.json DIR: the single-machine dir', () => {
  it('reads DIR as worker --runtime node does: sidecar.json optional, only its trust keys, the local servers checked there', async () => {
    const { TrustProfileStore } = await import('../sidecar/trust/profile-store.ts');
    const root = join(dir, 'single');
    write('single/mcp-servers/mcp.json', { mcpServers: { echo: { command: process.execPath, args: ['-e', ''] } } });
    write('single/trust-profiles/workspace.json', { 'network-capabilities': [] });
    const revision = (await new TrustProfileStore(join(root, 'trust-profiles')).load('workspace')).revision;
    const config = (pinned: string) => ({
      agents: [{ name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['echo'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': pinned } }],
      servers: { echo: { executor: { type: 'local' } } },
    });
    const file = write('single/worker.json', config(revision));
    const ok = await switchyard('check', '--runtime', 'node', file, root);
    expect(ok.stdout).not.toContain('sidecar.json');
    expect(ok.stdout).toContain(`${file} × ${root}: ok (across files)`);
    expect(ok.code).toBe(0);

    // What single-machine mode reads of a sidecar.json there: "trust-profile" and "allow-uncontained".
    write('single/sidecar.json', { 'allow-uncontained': true });
    const withKeys = await switchyard('check', '--runtime', 'node', file, root);
    expect(withKeys.stdout).toContain(`${join(root, 'sidecar.json')}: ok (sidecar config)`);
    expect(withKeys.code).toBe(0);
    rmSync(join(root, 'sidecar.json'));

    // The cross checks apply to this machine as to a host: a stale pin is refused here too.
    const stale = write('single/stale.json', config(`sha256:${'0'.repeat(64)}`));
    const refused = await switchyard('check', '--runtime', 'node', stale, root);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(`  agents[0].trust-context.trust-profile-revision: this machine (single-machine mode) has trust profile "workspace" at ${revision}: the agent would be refused (trust-profile-stale)`);

    // A linked host's dir still needs its sidecar.json, whatever the runtime.
    expect((await switchyard('check', root)).stdout).toContain(`${join(root, 'sidecar.json')}: not found\n`);
  });

  it('names the dir of a floor that exposes it as the single-machine mode\'s, not a sidecar\'s with a host key (review s23)', async () => {
    const root = join(dir, 'single-exposed');
    write('single-exposed/mcp-servers/mcp.json', { mcpServers: { echo: { command: process.execPath, args: ['-e', ''] } } });
    write('single-exposed/trust-profiles/wide.json', { 'filesystem-paths': [{ 'source-path': dir, 'access-mode': 'read-only' }], 'network-capabilities': [] });
    write('single-exposed/sidecar.json', { 'trust-profile': 'wide' });
    const file = write('single-exposed/worker.json', { agents: [{ name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['echo'] }], servers: { echo: { executor: { type: 'local' } } } });
    const { stdout } = await switchyard('check', '--runtime', 'node', file, root);
    expect(stdout).toContain(`which contains the single-machine mode's config dir (${root})`);
    expect(stdout).not.toContain('host key');
  });

  it('fails an agent whose launches the local host refuses for a floor granting the worker config\'s folder, as worker --runtime node does (review s24)', async () => {
    const root = join(dir, 'single-config-granted', 'local');
    const granted = join(dir, 'single-config-granted', 'granted');
    write('single-config-granted/local/mcp-servers/mcp.json', { mcpServers: { echo: { command: process.execPath, args: ['-e', ''] } } });
    write('single-config-granted/local/trust-profiles/floor.json', { 'filesystem-paths': [{ 'source-path': granted, 'access-mode': 'read-write' }], 'network-capabilities': [] });
    write('single-config-granted/local/sidecar.json', { 'trust-profile': 'floor' });
    const file = write('single-config-granted/granted/worker.json', { agents: [{ name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['echo'] }], servers: { echo: { executor: { type: 'local' } } } });
    const { code, stdout } = await switchyard('check', '--runtime', 'node', file, root);
    expect(stdout).toContain(`grants "${granted}", which contains the worker config (--config: ${file})`);
    expect(code).toBe(1);
  });

  it('checks the config\'s own folder when no DIR is named, as worker --runtime node reads it without --config-dir', async () => {
    const root = join(dir, 'single-implicit');
    write('single-implicit/mcp-servers/mcp.json', { mcpServers: { echo: { command: process.execPath, args: ['-e', ''] } } });
    const config = (name: string) => ({ agents: [{ name: 'alice', 'token-sha256': 'a'.repeat(64), servers: [name] }], servers: { [name]: { executor: { type: 'local' } } } });
    write('single-implicit/sidecar.json', { 'allow-uncontained': true });
    const file = write('single-implicit/worker.json', config('echo'));
    const ok = await switchyard('check', '--runtime', 'node', file);
    expect(ok.stdout).toContain(`${file}: its local servers are read from ${root}, as switchyard worker --runtime node reads them without --config-dir`);
    expect(ok.stdout).toContain(`${file} × ${root}: ok (across files)`);
    expect(ok.code).toBe(0);
    const missing = write('single-implicit/missing.json', config('ghost'));
    const refused = await switchyard('check', '--runtime', 'node', missing);
    expect(refused.stdout).toContain(`  servers.ghost.executor: this machine (single-machine mode) defines no server "ghost" in ${join(root, 'mcp-servers', 'mcp.json')}`);
    expect(refused.code).toBe(1);
    // The edge has no local servers to read, and a config with none has no folder to check.
    expect((await switchyard('check', '--runtime', 'node', write('single-implicit/none.json', { agents: [], servers: {} }))).stdout).not.toContain('local servers are read from');
  });
});
