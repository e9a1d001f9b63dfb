import { describe, expect, it } from 'vitest';
import type { WorkerConfig } from './worker-config.ts';
import { createConfigReloader } from './config-reloader.ts';

function logger() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => lines.push({ level, msg, fields });
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return { log: log as never, lines };
}

const VALID = JSON.stringify({ agents: [], servers: {} });

describe('worker config reloader', () => {
  it('puts a valid new config in force, and leaves an unchanged text alone', async () => {
    const { log, lines } = logger();
    let text = VALID;
    const applied: WorkerConfig[] = [];
    const reload = createConfigReloader({ file: 'w.json', readText: async () => text, runtime: 'edge', initialText: VALID, target: { reload: async (next) => (applied.push(next), { endedSessions: 2 }) }, log });
    expect(await reload('file')).toEqual({ kind: 'unchanged' });
    text = JSON.stringify({ agents: [], servers: {}, 'session-idle-seconds': 60 });
    expect(await reload('SIGHUP')).toEqual({ kind: 'reloaded', endedSessions: 2 });
    expect(applied.map((c) => c['session-idle-seconds'])).toEqual([60]);
    expect(lines).toEqual([{ level: 'info', msg: 'Worker config reloaded', fields: { file: 'w.json', trigger: 'SIGHUP', endedSessions: 2 } }]);
    // An operator's SIGHUP with nothing changed is answered in the log; a file event's is not.
    expect(await reload('SIGHUP')).toEqual({ kind: 'unchanged' });
    expect(lines.at(-1)).toEqual({ level: 'info', msg: 'Worker config unchanged: nothing to reload', fields: { file: 'w.json', trigger: 'SIGHUP' } });
    expect(await reload('file')).toEqual({ kind: 'unchanged' });
    expect(lines).toHaveLength(2);
  });

  it('refuses an invalid config with every problem as path: message, and applies nothing', async () => {
    const { log, lines } = logger();
    const reload = createConfigReloader({
      file: 'w.json',
      readText: async () => JSON.stringify({ agents: [{ name: 'a' }], servers: {}, extra: 1 }),
      runtime: 'edge',
      target: { reload: async () => { throw new Error('must not be called'); } },
      log,
    });
    const outcome = await reload('file');
    expect(outcome.kind).toBe('refused');
    expect(outcome.kind === 'refused' && outcome.problems).toEqual(expect.arrayContaining(['agents[0].token-sha256: is required', 'agents[0].servers: is required']));
    expect(lines[0]).toMatchObject({ level: 'error', msg: 'Worker config refused: the config in force stays', fields: { file: 'w.json', trigger: 'file' } });
  });

  it('refuses a file it cannot read', async () => {
    const { log } = logger();
    const missing = Object.assign(new Error('gone'), { code: 'ENOENT' });
    const reload = createConfigReloader({ file: 'w.json', readText: async () => { throw missing; }, runtime: 'edge', target: { reload: async () => ({ endedSessions: 0 }) }, log });
    expect(await reload('file')).toEqual({ kind: 'refused', problems: ['(root): cannot read "w.json": ENOENT'] });
  });
});
