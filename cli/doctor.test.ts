import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { formatDoctor, runDoctor } from './doctor.ts';

describe('switchyard doctor', () => {
  it('passes on this machine: bubblewrap present and usable, Deno found', async () => {
    const checks = await runDoctor();
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(byName['bubblewrap present']?.ok).toBe(true);
    expect(byName['bubblewrap usable']?.ok).toBe(true);
    expect(byName['deno found']?.detail).toMatch(/^deno \d+\.\d+/);
  });

  it('says how to install bubblewrap when it is missing', async () => {
    const checks = await runDoctor({ bwrap: '/nonexistent/bwrap' });
    const present = checks.find((c) => c.name === 'bubblewrap present');
    expect(present?.ok).toBe(false);
    expect(formatDoctor(checks)).toContain('→ Install it: sudo apt-get install -y bubblewrap');
    expect(checks.some((c) => c.name === 'bubblewrap usable')).toBe(false);
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
