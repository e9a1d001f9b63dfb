/**
 * Bad configuration files: the worker config, sidecar.json, mcp.json and trust profiles.
 *
 * fast-check first, in process: random near-miss configs never make a parser throw anything but
 * a `ValidationError` whose every problem is a `path: message`. Then a corpus of known-nasty files
 * through the real CLI (`switchyard check FILE…`, one run for all of them): each is reported with
 * the problem it has, no stack trace, exit code 1. Last, the two long-running commands refuse a
 * bad config cleanly at start: the worker under Deno (exit 2, one line per problem) and the
 * sidecar CLI (exit 1, one `switchyard: …` line).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/validation.ts';
import { parseMcpServersFile } from '../../sidecar/host/server-config.ts';
import { parseWith } from '../../shared/validation.ts';
import { trustProfileFileSchema } from '../../sidecar/trust/profile-schema.ts';
import { parseWorkerConfig } from '../../worker/config/worker-config.ts';
import { DENO, REPO } from '../support/paths.ts';
import { Figures, SLOW_MS } from './figures.ts';

const run = promisify(execFile);
const figures = new Figures('config-input');
const HEX = 'a'.repeat(64);
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-config-input-'));
  mkdirSync(join(dir, 'trust-profiles'));
});

afterAll(() => {
  figures.report();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Runs a parser; anything thrown but a ValidationError with well-formed problems fails the property. */
function onlyClearProblems(parse: (input: unknown) => unknown) {
  return (input: unknown) => {
    figures.inputs++;
    try {
      parse(input);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      for (const issue of error.issues) expect(issue.path.length > 0 && issue.message.length > 0).toBe(true);
    }
  };
}

const agent = fc.record({ name: fc.oneof(fc.constant('alice'), fc.string()), 'token-sha256': fc.oneof(fc.constant(HEX), fc.string()), servers: fc.array(fc.constantFrom('a', 'b', '../x', '__proto__')), 'trust-context': fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] });
const descriptor = fc.record({ type: fc.constantFrom('local', 'http', 'user-computer-profile', 'reverse-http', 'ssh'), 'entity-id': fc.constantFrom('h', '../x', ''), url: fc.oneof(fc.webUrl(), fc.constant('file:///etc/passwd')), target: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] });
const workerConfig = fc.record(
  {
    agents: fc.oneof(fc.array(agent, { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
    hosts: fc.array(fc.record({ 'entity-id': fc.constantFrom('h', 'h', '../x'), 'public-key': fc.constantFrom(`ed25519:${'A'.repeat(43)}`, 'nope') })),
    servers: fc.dictionary(fc.constantFrom('a', 'b', '../x', '__proto__', 'a__b'), fc.record({ executor: descriptor, extra: fc.jsonValue() }, { requiredKeys: [] })),
    'request-timeout-seconds': fc.oneof(fc.double(), fc.string()),
    'allowed-hosts': fc.array(fc.string()),
    unknown: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: [] },
);
const mcpJson = fc.record({ mcpServers: fc.dictionary(fc.string({ maxLength: 8 }), fc.record({ command: fc.string(), args: fc.jsonValue({ maxDepth: 1 }), url: fc.oneof(fc.webUrl(), fc.string()), env: fc.jsonValue({ maxDepth: 1 }), shell: fc.boolean() }, { requiredKeys: [] })) }, { requiredKeys: [] });
const profile = fc.record(
  {
    'base-trust-profiles': fc.array(fc.oneof(fc.constantFrom('base', '../x'), fc.jsonValue({ maxDepth: 1 }))),
    'filesystem-paths': fc.array(fc.record({ 'source-path': fc.constantFrom('/tmp/x', 'relative', '/a/../../b', '/x\u0000'), 'access-mode': fc.constantFrom('read-only', 'read-write', 'all') }, { requiredKeys: [] })),
    'network-capabilities': fc.array(fc.constantFrom('loopback', 'internet-client', 'everything')),
    environment: fc.jsonValue({ maxDepth: 2 }),
    'allowed-mcp-tool-call-schemas': fc.array(fc.jsonValue({ maxDepth: 2 })),
  },
  { requiredKeys: [] },
);

describe('configuration input', { timeout: SLOW_MS }, () => {
  it('random near-miss configs: parsers report problems as path: message, never anything else', () => {
    fc.assert(fc.property(workerConfig, onlyClearProblems((c) => parseWorkerConfig(c, { runtime: 'edge' }))), { numRuns: 300 });
    fc.assert(fc.property(mcpJson, onlyClearProblems((c) => parseMcpServersFile(c, dir))), { numRuns: 300 });
    fc.assert(fc.property(profile, onlyClearProblems((c) => parseWith(trustProfileFileSchema, c, 'trust profile'))), { numRuns: 300 });
    expect(({} as Record<string, unknown>).executor).toBeUndefined(); // no prototype pollution through "__proto__" keys
  });

  it('the corpus through `switchyard check`: each file reported with its problem, no stack trace', async () => {
    const files: Array<[string, string, RegExp]> = [
      ['worker-not-json.json', '{"agents": [', /\(root\): not valid JSON/],
      ['worker-empty.json', '{"agents": []}', /servers: is required/],
      ['worker-token.json', JSON.stringify({ agents: [{ name: 'a', 'token-sha256': 'secret-in-clear', servers: [] }], servers: {} }), /agents\[0\]\.token-sha256: must be 64 hex digits/],
      ['worker-undefined-server.json', JSON.stringify({ agents: [{ name: 'a', 'token-sha256': HEX, servers: ['ghost'] }], servers: {} }), /agents\[0\]\.servers/],
      ['worker-traversal.json', JSON.stringify({ agents: [], hosts: [{ 'entity-id': '../x', 'public-key': `ed25519:${'A'.repeat(43)}` }], servers: { '../x': { executor: { type: 'local' } } } }), /hosts\[0\]\.entity-id: must/],
      ['worker-file-url.json', JSON.stringify({ agents: [], servers: { docs: { executor: { type: 'http', url: 'file:///etc/passwd' } } } }), /servers\.docs\.executor/],
      ['worker-proto.json', '{"agents": [], "servers": {"__proto__": {"executor": {"type": "ssh"}}}}', /servers\.__proto__/],
      ['worker-timeout.json', JSON.stringify({ agents: [], servers: {}, 'request-timeout-seconds': -1, surprise: true }), /surprise: unknown key/],
      ['mcp.json', JSON.stringify({ mcpServers: { '../x': { command: 'node' }, empty: { command: '' }, both: { command: 'node', url: 'http://x/mcp' }, ftp: { url: 'ftp://x/mcp' }, shell: { command: 'sh', shell: true } } }), /mcpServers\.\.\.\/x: server name must/],
      ['sidecar.json', JSON.stringify({ worker: 'not a url', 'entity-id': '../x', 'key-file': 'host.key', secret: 'inline-secret' }), /worker: must be an absolute URL/],
      ['trust-profiles/bad.json', JSON.stringify({ 'filesystem-paths': [{ 'source-path': 'relative', 'access-mode': 'all' }], 'network-capabilities': ['everything'], 'network-capability': [], environment: { inherit: ['BAD-NAME'] }, 'allowed-mcp-tool-call-schemas': [{ type: 5 }] }), /network-capability: unknown key/],
    ];
    for (const [name, text] of files) writeFileSync(join(dir, name), text);
    figures.inputs += files.length;
    const result = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'check', ...files.map(([name]) => join(dir, name))], { cwd: REPO }).then(
      () => ({ code: 0, stdout: '', stderr: '' }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('');
    expect(result.stdout).not.toMatch(/\n\s+at /); // no stack trace
    for (const [name, , problem] of files) {
      const section = result.stdout.split(`${join(dir, name)}: `)[1]?.split(/\n(?=\/)/)[0] ?? '';
      expect([name, section]).toEqual([name, expect.stringMatching(/^\d+ problems? \(/)]);
      expect([name, section]).toEqual([name, expect.stringMatching(problem)]);
    }
    expect(result.stdout).not.toContain('inline-secret');
  });

  it('switchyard worker refuses a bad config file as `check` reports it, on either runtime, before Deno starts', async () => {
    const file = join(dir, 'worker-cli.json');
    writeFileSync(file, JSON.stringify({ agents: [{ name: 'a', servers: [] }], servers: {}, surprise: 1 }));
    figures.inputs++;
    const checked = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'check', file], { cwd: REPO }).then(
      () => '',
      (error: { stdout: string }) => error.stdout,
    );
    for (const runtime of ['deno', 'node']) {
      const result = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'worker', '--runtime', runtime, '--config', file, '--port', '0'], { cwd: REPO }).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
      expect([runtime, result.code]).toEqual([runtime, 1]);
      expect([runtime, result.stderr]).toEqual([runtime, `switchyard: ${checked}`]);
      expect(result.stdout).toBe('');
    }
    expect(checked).toBe(`${file}: 2 problems (worker config)\n  agents[0].token-sha256: is required\n  surprise: unknown key\n`);
  });

  it('the worker refuses a bad config at start: exit 2 and one line per problem', async () => {
    const config = JSON.stringify({ agents: [{ name: 'a', 'token-sha256': 'nope', servers: ['ghost'] }], servers: {}, 'session-idle-seconds': 1.5 });
    const result = await run(DENO, ['run', '--quiet', '--allow-env', '--allow-read', '--allow-net', 'worker/adapters/deno/deno-worker.ts'], { cwd: REPO, env: { ...process.env, SWITCHYARD_WORKER_CONFIG: config, PORT: '0' } }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    figures.inputs++;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^SWITCHYARD_WORKER_CONFIG: \d+ problems \(worker config\)\n {2}agents\[0\]\.token-sha256: must be 64 hex digits/);
    expect(result.stderr).toMatch(/session-idle-seconds: /);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('the sidecar CLI refuses a bad sidecar.json at start: exit 1 and check\'s report, naming the file', async () => {
    const config = join(dir, 'bad-sidecar');
    mkdirSync(config);
    writeFileSync(join(config, 'sidecar.json'), JSON.stringify({ worker: 'ftp://x', 'entity-id': 'a', extra: 1 }));
    const result = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'sidecar', '--config-dir', config], { cwd: REPO }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    figures.inputs++;
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`switchyard: ${join(config, 'sidecar.json')}: 2 problems (sidecar config)\n  worker: must be an http(s): or ws(s): URL\n  extra: unknown key\n`);
  });

  it('the sidecar CLI refuses at start a dir `check` refuses, not only its sidecar.json (review s22: it ran what the first reload refused)', async () => {
    const config = join(dir, 'bad-server-file');
    mkdirSync(join(config, 'mcp-servers'), { recursive: true });
    writeFileSync(join(config, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:9', 'entity-id': 'a', 'key-file': 'missing.key' }));
    writeFileSync(join(config, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { echo: { comand: 'node' } } }));
    const result = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'sidecar', '--config-dir', config], { cwd: REPO }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    figures.inputs++;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`switchyard: Sidecar config refused:\n${join(config, 'mcp-servers', 'mcp.json')}: 1 problem`);
    expect(result.stderr).toContain('mcpServers.echo.comand: unknown key (did you mean "command"?)');
  });
});
