/**
 * The two Node files `npm run build` writes for the CLI: `dist/sidecar.js`, the one file a
 * workstation installs (the sidecar's commands, no worker code and no MCP SDK: checked on esbuild's
 * metafile),
 * and `dist/switchyard.js`, every command, which the package's `switchyard` bin runs once built.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS build script
import { buildCli, buildSidecar } from '../scripts/build.mjs';

const out = mkdtempSync(join(tmpdir(), 'switchyard-cli-bundle-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

interface Metafile {
  inputs: Record<string, unknown>;
}

async function node(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, { encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function configDir(): string {
  const dir = mkdtempSync(join(out, 'cfg-'));
  mkdirSync(join(dir, 'trust-profiles'), { recursive: true });
  writeFileSync(join(dir, 'trust-profiles', 'workspace.json'), JSON.stringify({ 'network-capabilities': [] }));
  // `secret-file` is the shared secret of earlier versions: an unknown key now.
  writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'nope', 'entity-id': 'h', 'secret-file': 'host.secret' }));
  return dir;
}

describe('dist/sidecar.js', () => {
  it('is built from the sidecar entry and holds no worker code', async () => {
    const { metafile } = (await buildSidecar({ outfile: join(out, 'sidecar.js') })) as { metafile: Metafile };
    const inputs = Object.keys(metafile.inputs);
    expect(inputs).toContain('cli/sidecar-main.ts');
    expect(inputs.some((i) => i.startsWith('sidecar/host/'))).toBe(true);
    expect(inputs.filter((i) => i.startsWith('worker/'))).toEqual([]);
    expect(inputs.filter((i) => /node_modules\/(hono|@hono|deno)\//.test(i))).toEqual([]);
  });

  it('loads none of the MCP SDK and no classic zod (the SDK\'s types.js builds every MCP schema at load: megabytes of idle RSS)', async () => {
    const { metafile } = (await buildSidecar({ outfile: join(out, 'sidecar-sdk-free.js') })) as { metafile: Metafile };
    const inputs = Object.keys(metafile.inputs);
    expect(inputs.filter((i) => i.includes('node_modules/@modelcontextprotocol/'))).toEqual([]);
    expect(inputs.filter((i) => i.includes('node_modules/zod/v4/classic/'))).toEqual([]);
  });

  it('runs the workstation commands on its own: profiles with their revisions, doctor without a Deno check', async () => {
    const sidecar = join(out, 'sidecar.js');
    await buildSidecar({ outfile: sidecar });
    const dir = configDir();
    expect(await node(sidecar, 'sidecar', 'profiles', '--config-dir', dir)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^workspace {2}sha256:[0-9a-f]{64}\n$/) });
    const doctor = await node(sidecar, 'doctor');
    expect(doctor.stdout).toMatch(/bubblewrap present/);
    expect(doctor.stdout).not.toMatch(/deno/i);
    const help = await node(sidecar, '--help');
    expect(help).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: node sidecar\.js/) });
    const fresh = join(mkdtempSync(join(out, 'init-')), 'switchyard');
    const init = await node(sidecar, 'sidecar', 'init', '--config-dir', fresh, '--worker', 'https://yard.example.com', '--entity-id', 'h');
    expect(init).toMatchObject({ code: 0, stdout: expect.stringMatching(/^ {2}npx --no switchyard-mcp host add --config worker\.json '\{"entity-id":"h","public-key":"ed25519:[A-Za-z0-9_-]{43}"\}'$/m) });
  });

  it('checks a profile\'s JSON Schemas with the ajv it carries, loaded on first use: both dialects, a bad schema named', async () => {
    const sidecar = join(out, 'sidecar.js');
    await buildSidecar({ outfile: sidecar });
    const dir = configDir();
    const schemas = [{ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }, { type: 'object', properties: { path: { type: 'string', pattern: '^\\S+$' } } }];
    writeFileSync(join(dir, 'trust-profiles', 'workspace.json'), JSON.stringify({ 'allowed-mcp-tool-call-schemas': schemas }));
    writeFileSync(join(dir, 'trust-profiles', 'broken.json'), JSON.stringify({ 'restricted-mcp-tool-call-schemas': [{ type: 12 }] }));
    // Its patterns go to the linear-time engine it carries (re2js), which takes no lookaround.
    writeFileSync(join(dir, 'trust-profiles', 'lookahead.json'), JSON.stringify({ 'allowed-mcp-tool-call-schemas': [{ type: 'string', pattern: '^(?!admin)' }] }));
    const result = await node(sidecar, 'sidecar', 'profiles', '--config-dir', dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^workspace {2}sha256:[0-9a-f]{64}$/m);
    expect(result.stdout + result.stderr).toContain('restricted-mcp-tool-call-schemas[0]: invalid JSON Schema: schema/type must be');
    expect(result.stdout + result.stderr).toContain('cannot be matched in linear time');
  });

  it('names in doctor\'s hints only what it can run: no check, its own commands as node sidecar.js runs them', async () => {
    const sidecar = join(out, 'sidecar.js');
    await buildSidecar({ outfile: sidecar });
    const broken = configDir();
    const report = await node(sidecar, 'doctor', '--config-dir', broken);
    expect(report.code).toBe(1);
    expect(report.stdout).toContain(`\n     → Fix ${join(broken, 'sidecar.json')}: its problems are listed above\n`);
    expect(report.stdout).not.toContain('switchyard check');

    const keyless = configDir();
    writeFileSync(join(keyless, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:1', 'entity-id': 'h' }));
    writeFileSync(join(keyless, 'trust-profiles', 'bad.json'), JSON.stringify({ 'network-capabilities': ['everything'] }));
    const deep = await node(sidecar, 'doctor', '--config-dir', keyless);
    expect(deep.stdout).toContain(`\n     → Fix ${join(keyless, 'trust-profiles', 'bad.json')}: its problems are listed above\n`);
    expect(deep.stdout).toContain(`\n     → Run node ${sidecar} sidecar init --config-dir ${keyless} --worker http://127.0.0.1:1 --entity-id h to write one`);
    expect(deep.stdout).not.toMatch(/\bswitchyard (?:check|sidecar|doctor)\b/); // a command this file does not have, named as the full bin

    const missing = join(mkdtempSync(join(out, 'missing-')), 'switchyard');
    const fresh = await node(sidecar, 'doctor', '--config-dir', missing);
    const init = `node ${sidecar} sidecar init --config-dir ${missing} --worker URL --entity-id ID`;
    expect(fresh.stdout).toContain(`\n     → Set up this workstation: ${init}\n`);
    // The hint runs as printed, once given the worker and the entity id.
    const [, ...args] = init.replace('URL', 'https://yard.example.com').replace('ID', 'h').split(' ');
    expect(await node(...args)).toMatchObject({ code: 0 });
  });

  it('names the full package for a command it does not carry', async () => {
    const sidecar = join(out, 'sidecar.js');
    await buildSidecar({ outfile: sidecar });
    for (const command of ['worker', 'start', 'check']) {
      const result = await node(sidecar, command, '--config', 'x.json');
      expect(result.code, command).toBe(1);
      expect(result.stderr).toContain(`"${command}" is not part of the workstation's sidecar.js`);
      expect(result.stderr).toContain(`npx switchyard-mcp ${command}`);
    }
  });

  it('says its version on its own, copied away from the package, as the full bin does', async () => {
    const alone = mkdtempSync(join(out, 'alone-'));
    const sidecar = join(alone, 'sidecar.js');
    await buildSidecar({ outfile: sidecar });
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', 'version']) expect(await node(sidecar, flag)).toEqual({ code: 0, stdout: `switchyard sidecar.js ${version}\n`, stderr: '' });
    const cli = join(alone, 'switchyard.js');
    await buildCli({ outfile: cli });
    expect(await node(cli, '--version')).toEqual({ code: 0, stdout: `switchyard ${version}\n`, stderr: '' });
  });
});

describe('dist/switchyard.js', () => {
  it('is one Node file with every command: check lists every problem', async () => {
    const cli = join(out, 'switchyard.js');
    const { metafile } = (await buildCli({ outfile: cli })) as { metafile: Metafile };
    expect(Object.keys(metafile.inputs)).toEqual(expect.arrayContaining(['cli/main.ts', 'cli/check.ts', 'cli/worker-command.ts', 'cli/start.ts', 'cli/sidecar-command.ts']));
    const report = await node(cli, 'check', join(configDir(), 'sidecar.json'));
    expect(report.code).toBe(1);
    expect(report.stdout).toContain('worker: must be an absolute URL');
    expect(report.stdout).toContain('secret-file: unknown key');
    const help = await node(cli, '--help');
    for (const command of ['start', 'worker', 'sidecar', 'check', 'doctor']) expect(help.stdout).toContain(`  ${command} `);
  });
});
