/**
 * The README stays true: its config reference is what the zod schemas accept, its layout names
 * the real top-level folders, and every npm script and CLI command it mentions exists.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { END, renderConfigReference, START } from '../scripts/config-reference.ts';

const ROOT = join(import.meta.dirname, '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('README', () => {
  it('has the config reference the zod schemas generate (run npm run docs after changing a schema)', () => {
    const start = readme.indexOf(START);
    const end = readme.indexOf(END);
    expect(start).toBeGreaterThan(-1);
    expect(readme.slice(start, end + END.length)).toBe(renderConfigReference());
  });

  it('documents every key of the DESIGN contract in the reference', () => {
    for (const key of ['`agents[].token-sha256`', '`agents[].trust-context.trust-profile-revision`', '`hosts[].public-key`', '`public-url`', '`servers.<name>.executor`', '`entity-id`', '`key-file`', '`filesystem-paths[].access-mode`', '`base-trust-profiles`', '`network-capabilities`']) {
      expect(readme).toContain(key);
    }
  });

  it('gives the defaults an operator tunes in the reference: idle sessions, per-agent limits, sandbox /tmp, modern instances, the reconnect backoff cap', () => {
    const reference = renderConfigReference();
    expect(reference).toMatch(/\| `session-idle-seconds` \| integer \| no \| `900` \|/);
    expect(reference).toMatch(/\| `sandbox\.tmp-size-mib` \| integer \| no \| `64` \|/);
    expect(reference).toMatch(/\| `modern-instance-idle-seconds` \| integer \| no \| `900` \|/);
    expect(reference).toMatch(/\| `aggregate-start-wait-seconds` \| number \| no \| `5` \| .*\(reason: starting\)/);
    expect(reference).toMatch(/\| `SWITCHYARD_LINK_RETRY_CAP_MS` \| sidecar \| `30000` \| The reconnect backoff cap/);
    expect(reference).toMatch(/\| `max-sessions-per-agent` \| integer \| no \| `16` \|/);
    expect(reference).toMatch(/\| `limits\.server-processes-per-agent` \| integer \| no \| `32` \|/);
    expect(reference).toMatch(/\| `limits\.server-processes` \| integer \| no \| `64` \|/);
    expect(reference).toMatch(/\| `limits\.memory-limit-mib` \| integer \| no \| `4096` \|/);
    expect(reference).toMatch(/\| `request-timeout-seconds` \| number \| no \|  \| .*Unset: 60 to open a server, 600 for one request on \/mcp/);
  });

  it('lists exactly the real top-level source folders in its layout', () => {
    const layout = readme.split('## Layout')[1] ?? '';
    const listed = [...layout.matchAll(/^(\w+)\/\s/gm)].map((m) => m[1]).sort();
    const real = readdirSync(ROOT).filter((n) => !n.startsWith('.') && statSync(join(ROOT, n)).isDirectory() && ['shared', 'worker', 'sidecar', 'cli', 'test'].includes(n));
    expect(listed).toEqual(real.sort());
  });

  it('says nothing twice: no paragraph of two lines or more appears again', () => {
    const paragraphs = readme.split(/\n\s*\n/).map((p) => p.trim()).filter((p) => p.includes('\n') && !p.startsWith('```'));
    const repeated = paragraphs.filter((p, i) => paragraphs.indexOf(p) !== i);
    expect(repeated).toEqual([]);
  });

  it('names only npm scripts and switchyard commands that exist', () => {
    const scripts = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
    for (const [, name] of readme.matchAll(/npm run (\w+)/g)) expect(scripts).toContain(name);
    expect(readme).toContain('npm start');
    expect(readme).toContain('npm test');
    const commands = ['start', 'worker', 'sidecar', 'check', 'doctor', 'host', 'agent', 'admin-token'];
    for (const [, command] of readme.matchAll(/switchyard (\w[\w-]*)/g)) expect(commands).toContain(command);
  });
});
