import { describe, expect, it } from 'vitest';
import type { WorkerConfig } from './worker-config.ts';
import { createConfigReloader } from './config-reloader.ts';
import { parseWorkerConfigText } from './worker-config.ts';
import { composeWorker } from '../compose.ts';
import { sha256Hex } from '../../shared/credentials.ts';

function logger() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => lines.push({ level, msg, fields });
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return { log: log as never, lines };
}

const VALID = JSON.stringify({ agents: [], servers: {} });

/** The worker a reload puts a config in force on: the config in force, kept as `ComposedWorker` keeps it. */
function target(initial: string, reload: (next: WorkerConfig) => Promise<{ endedSessions: number }> = async () => ({ endedSessions: 0 })) {
  let config = parseWorkerConfigText(initial, { runtime: 'edge' });
  return {
    get config() {
      return config;
    },
    reload: async (next: WorkerConfig) => {
      const outcome = await reload(next);
      config = next;
      return outcome;
    },
  };
}

describe('worker config reloader', () => {
  it('puts a valid new config in force, and leaves an unchanged text alone', async () => {
    const { log, lines } = logger();
    let text = VALID;
    const applied: WorkerConfig[] = [];
    const reload = createConfigReloader({ file: 'w.json', readText: async () => text, runtime: 'edge', initialText: VALID, target: target(VALID, async (next) => (applied.push(next), { endedSessions: 2 })), log });
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
      target: target(VALID, async () => { throw new Error('must not be called'); }),
      log,
    });
    const outcome = await reload('file');
    expect(outcome.kind).toBe('refused');
    expect(outcome.kind === 'refused' && outcome.problems).toEqual(expect.arrayContaining(['agents[0].token-sha256: is required', 'agents[0].servers: is required']));
    expect(lines[0]).toMatchObject({ level: 'error', msg: 'Worker config refused: the config in force stays', fields: { file: 'w.json', trigger: 'file' } });
  });

  it('refuses an audit.file changed to one the next start could not open, and checks only a changed one', async () => {
    const { log } = logger();
    const withAudit = (file: string, idle = 900) => JSON.stringify({ agents: [], servers: {}, 'session-idle-seconds': idle, audit: { file } });
    let text = withAudit('ok/audit.jsonl');
    const asked: string[] = [];
    const problems: Record<string, string> = { 'gone/audit.jsonl': 'the folder "gone" does not exist, so the start would refuse to open "gone/audit.jsonl": create the folder' };
    const reload = createConfigReloader({
      file: 'w.json', readText: async () => text, runtime: 'edge', initialText: text, target: target(text), log,
      auditFileProblem: (file) => (asked.push(file), problems[file]),
    });
    text = withAudit('gone/audit.jsonl');
    expect(await reload('file')).toEqual({ kind: 'refused', problems: [`audit.file: ${problems['gone/audit.jsonl']}`] });
    // The file in force is not judged again: its folder going away later must not hold up an agent's removal.
    problems['ok/audit.jsonl'] = 'the folder "ok" does not exist, so the start would refuse to open "ok/audit.jsonl": create the folder';
    text = withAudit('ok/audit.jsonl', 60);
    expect(await reload('file')).toEqual({ kind: 'reloaded', endedSessions: 0 });
    text = withAudit('new/audit.jsonl', 60);
    expect(await reload('file')).toEqual({ kind: 'reloaded', endedSessions: 0 });
    text = withAudit('new/audit.jsonl', 30);
    expect(await reload('file')).toEqual({ kind: 'reloaded', endedSessions: 0 });
    expect(asked).toEqual(['gone/audit.jsonl', 'new/audit.jsonl']);
  });

  it('refuses one save once, however many file events it comes as, and says it again to a SIGHUP', async () => {
    const { log, lines } = logger();
    let text = JSON.stringify({ agents: [], servers: {}, extra: 1 });
    const reload = createConfigReloader({ file: 'w.json', readText: async () => text, runtime: 'edge', initialText: VALID, target: target(VALID), log });
    expect(await reload('file')).toEqual({ kind: 'refused', problems: ['extra: unknown key'] });
    expect(await reload('file')).toEqual({ kind: 'refused', problems: ['extra: unknown key'] });
    expect(lines.filter((l) => l.level === 'error')).toHaveLength(1);
    await reload('SIGHUP');
    expect(lines.filter((l) => l.level === 'error')).toHaveLength(2);
    // Put back, then broken the same way again: news both times.
    text = VALID;
    expect(await reload('file')).toEqual({ kind: 'unchanged' });
    text = JSON.stringify({ agents: [], servers: {}, extra: 1 });
    await reload('file');
    expect(lines.filter((l) => l.level === 'error')).toHaveLength(3);
  });

  it('refuses a file it cannot read', async () => {
    const { log } = logger();
    const missing = Object.assign(new Error('gone'), { code: 'ENOENT' });
    const reload = createConfigReloader({ file: 'w.json', readText: async () => { throw missing; }, runtime: 'edge', target: target(VALID), log });
    expect(await reload('file')).toEqual({ kind: 'refused', problems: ['(root): cannot read "w.json": not found'] });
  });

  it('refuses, whole, a valid config this worker cannot run, keeps the one in force, and reads the next edit again', async () => {
    const { log, lines } = logger();
    const bob = { name: 'bob', 'token-sha256': await sha256Hex('sy_bob-token-0123456789'), servers: [] };
    const start = JSON.stringify({ agents: [bob], servers: {} });
    // Started without a state store, as a worker without "built-in" at start is.
    const worker = composeWorker({ config: parseWorkerConfigText(start, { runtime: 'edge' }) });
    let text = start;
    const reload = createConfigReloader({ file: 'w.json', readText: async () => text, runtime: 'edge', initialText: start, target: worker, log });
    const asBob = () => worker.fetch(new Request('http://127.0.0.1:8787/healthz', { headers: { authorization: 'Bearer sy_bob-token-0123456789', host: '127.0.0.1:8787' } }));
    expect((await asBob()).status).toBe(200);

    // Built-in OAuth added and bob removed in one edit: refused, and bob keeps working as the config in force says.
    text = JSON.stringify({ agents: [], servers: {}, oauth: { 'built-in': {} } });
    const outcome = await reload('file');
    expect(outcome).toEqual({ kind: 'refused', problems: [expect.stringMatching(/^oauth\.built-in: needs a state store, which this worker was not given: start it with a state dir/)] });
    expect(lines.at(-1)).toMatchObject({ level: 'error', msg: 'Worker config refused: the config in force stays' });
    expect(worker.config.agents.map((a) => a.name)).toEqual(['bob']);
    expect((await asBob()).status).toBe(200);
    // The same text again is not taken for the one in force: it is refused again, not "unchanged".
    expect((await reload('SIGHUP')).kind).toBe('refused');

    // OAuth taken out again: bob's removal applies.
    text = JSON.stringify({ agents: [], servers: {} });
    expect(await reload('file')).toEqual({ kind: 'reloaded', endedSessions: 0 });
    expect((await asBob()).status).toBe(401);
    await worker.close();
  });

  it('applies audit include-arguments at once, and says the audit file and collector wait for the next start (review s22: silently ignored)', async () => {
    const { log, lines } = logger();
    const audited: Array<Record<string, unknown>> = [];
    const config = (audit: unknown) => JSON.stringify({ agents: [], servers: { edge: { executor: { type: 'http', url: 'https://mcp.example.test/mcp' } } }, audit });
    const start = config({ 'include-arguments': true });
    const worker = composeWorker({ config: parseWorkerConfigText(start, { runtime: 'edge' }), log, auditWrite: (line) => audited.push(JSON.parse(line)) });
    let text = start;
    const reload = createConfigReloader({ file: 'w.json', readText: async () => text, runtime: 'edge', initialText: start, target: worker, log });
    const call = () => {
      const ledger = worker.audit.ledger({ agent: 'alice', server: 'edge', era: 'legacy', route: 'passthrough' });
      ledger.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'login', arguments: { password: 'hunter2' } } });
      ledger.answer({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    };
    call();
    text = config({ 'include-arguments': false, file: 'audit.jsonl', otlp: { endpoint: 'http://127.0.0.1:4318/v1/traces' } });
    expect((await reload('SIGHUP')).kind).toBe('reloaded');
    call();
    expect(audited.filter((line) => line.event === 'call').map((line) => line.arguments)).toEqual([{ password: 'hunter2' }, undefined]);
    // Between the two calls, the reload itself: the audit settings it changed, named, never shown.
    expect(audited.filter((line) => line.event === 'config')).toEqual([expect.objectContaining({ changes: { settings: ['audit'] }, endedSessions: 0 })]);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([{ level: 'warn', msg: 'Worker config changes that apply at the next start', fields: { keys: ['audit.file', 'audit.otlp'] } }]);
    await worker.close();
  });

  it('says so when a refused file is put back as the config in force', async () => {
    const { log, lines } = logger();
    let text = VALID;
    const reload = createConfigReloader({ file: 'w.json', readText: async () => text, runtime: 'edge', initialText: VALID, target: target(VALID), log });
    text = '{"agents": [';
    expect((await reload('file')).kind).toBe('refused');
    text = VALID;
    expect(await reload('file')).toEqual({ kind: 'unchanged' });
    expect(lines.at(-1)).toEqual({ level: 'info', msg: 'Worker config file matches the config in force again', fields: { file: 'w.json', trigger: 'file' } });
    expect(await reload('file')).toEqual({ kind: 'unchanged' });
    expect(lines).toHaveLength(2);
  });
});
