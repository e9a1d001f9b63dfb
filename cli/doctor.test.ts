import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bubblewrapProbe } from '../sidecar/sandbox/index.ts';
import { formatDoctor, runDoctor } from './doctor.ts';

describe('switchyard doctor', () => {
  it('passes on this machine: bubblewrap present and usable, Deno found', async () => {
    const checks = await runDoctor();
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(byName['bubblewrap present']?.ok).toBe(true);
    expect(byName['bubblewrap usable']?.ok).toBe(true);
    expect(byName['slirp4netns present']).toMatchObject({ ok: true, detail: expect.stringMatching(/^slirp4netns version \d+\.\d+/) });
    expect(byName['deno found']?.detail).toMatch(/^deno \d+\.\d+/);
  });

  it('names the slirp4netns package when it is missing, the check a contained internet-client launch makes', async () => {
    const checks = await runDoctor({ slirp4netns: '/nonexistent/slirp4netns', deno: false });
    const network = checks.find((c) => c.name === 'slirp4netns present');
    expect(network).toMatchObject({ ok: false, detail: expect.stringContaining('slirp4netns, which is not installed') });
    expect(formatDoctor(checks)).toContain('→ Install it: sudo apt-get install -y slirp4netns');
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

  it('checks that the worker answers, and says what to do when it does not', async () => {
    const server = createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const up = (await runDoctor({ worker: `http://127.0.0.1:${port}` })).find((c) => c.name === 'worker reachable');
    expect(up).toMatchObject({ ok: true });
    await new Promise((r) => server.close(r));
    const down = (await runDoctor({ worker: `http://127.0.0.1:${port}` })).find((c) => c.name === 'worker reachable');
    expect(down?.ok).toBe(false);
    expect(down?.fix).toMatch(/Start the worker/);
  });
});
