/**
 * Live config (issue 18, item 7), against the real stack: the worker under Deno watching its
 * config file and the sidecar CLI watching its config dir, real stdio servers, real SDK clients.
 *
 * Both ways on both sides: a valid change is put in force without a restart, ending only the
 * sessions it affects (an agent removed, a server changed, a profile revision changed) while
 * every other session keeps its very process; an invalid change is refused, logged with every
 * problem worded as `switchyard check` words it, and the config in force stays.
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { checkConfigDir } from '../../cli/check-config-dir.ts';
import { checkFile } from '../../cli/check-file.ts';
import { describeFileProblems } from '../../shared/file-problems-report.ts';
import { formatIssue } from '../../shared/validation.ts';
import { closeClient, connectClient } from '../support/clients.ts';
import { agentEntry, randomCredential } from '../support/configs.ts';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { livePids, ProcessSet, waitForOutput, watch } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;
const open: Client[] = [];

beforeAll(async () => {
  stack = await startStack({
    servers: { faults: fixtureServer('fault-server.mjs'), pid: fixtureServer('pid-server.mjs') },
    agents: [
      { name: 'bob', servers: ['pid'] },
      { name: 'carol', servers: ['pid'] },
      { name: 'dana', servers: ['pid'], trust: { ref: 'tools' } },
    ],
    // Uncontained (no paths, no network key), so its servers run from this checkout as they are.
    profiles: { tools: { description: 'every tool' } },
  });
});

afterAll(async () => {
  for (const client of open) await closeClient(client).catch(() => {});
  await stack?.stop();
});

async function session(server: string, token: string): Promise<Client> {
  const client = await connectClient(`${stack.url}/servers/${server}/mcp`, token);
  open.push(client);
  return client;
}

const pidOf = async (client: Client): Promise<number> => {
  const result = (await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> };
  return Number(result.content[0]!.text);
};

const echoes = async (client: Client): Promise<unknown> => client.callTool({ name: 'echo', arguments: { message: 'still here' } });

/** Resolves once the process has logged `text` `count` times in all. */
async function logged(log: { filter(match: ReturnType<typeof msg>): unknown[] }, text: string, count: number): Promise<Array<Record<string, unknown>>> {
  await expect.poll(() => log.filter(msg(text)).length, { timeout: 15_000 }).toBe(count);
  return (log.filter(msg(text)) as Array<{ json: Record<string, unknown> }>).map((l) => l.json);
}

describe('live worker config', () => {
  it('applies a valid change without a restart: the removed agent\'s session ends, a new agent works, others keep their process', async () => {
    const file = stack.worker.configFile;
    const bob = await session('pid', stack.tokens.bob!);
    const carol = await session('pid', stack.tokens.carol!);
    const [bobPid, carolPid] = [await pidOf(bob), await pidOf(carol)];

    const config = JSON.parse(readFileSync(file, 'utf8')) as { agents: Array<{ name: string }> };
    const daveToken = randomCredential('dave-token');
    config.agents = [...config.agents.filter((a) => a.name !== 'carol'), agentEntry({ name: 'dave', token: daveToken, servers: ['pid'] }) as { name: string }];
    writeFileSync(file, JSON.stringify(config));

    const [reloaded] = await logged(stack.worker.err, 'Worker config reloaded', 1);
    expect(reloaded).toMatchObject({ endedSessions: 1, trigger: 'file' });
    // And on the audit record: who came and went, by name, and what it ended.
    const audited = stack.worker.err.filter((l) => l.json.msg === 'audit' && l.json.event === 'config').map((l) => l.json);
    expect(audited).toEqual([expect.objectContaining({ level: 'info', decision: 'allowed', endedSessions: 1, changes: { agents: { added: ['dave'], removed: ['carol'] } } })]);
    // Her token is no longer known, and her session was ended with its server process.
    await expect(pidOf(carol)).rejects.toThrow(/unauthorized/);
    expect(stack.worker.err.filter(msg('Agent session ended by a config change', { agent: 'carol', why: 'agent removed' }))).toHaveLength(1);
    await expect.poll(() => livePids([carolPid]), { timeout: 15_000 }).toEqual([]);
    expect(await pidOf(bob)).toBe(bobPid);
    const dave = await session('pid', daveToken);
    expect(await pidOf(dave)).toBeGreaterThan(0);

    // Both ways: an invalid config is refused with check's words, and the one in force stays.
    const broken = { ...config, 'bogus-key': 1, agents: [{ ...config.agents[0], servers: ['nope'] }, ...config.agents.slice(1)] };
    // Saved as editors do: a new file renamed over the old one.
    writeFileSync(`${file}.tmp`, JSON.stringify(broken));
    renameSync(`${file}.tmp`, file);
    const [refused] = await logged(stack.worker.err, 'Worker config refused: the config in force stays', 1);
    const expected = checkFile(file, 'edge').issues.map(formatIssue);
    expect(expected.length).toBeGreaterThan(0);
    expect(refused!.problems).toEqual(expected);
    expect(refused!.level).toBe('error');
    expect(await pidOf(bob)).toBe(bobPid);
    expect(await pidOf(await session('pid', daveToken))).toBeGreaterThan(0);

    // Fixed again, in place: the watch followed the renamed file.
    writeFileSync(file, JSON.stringify({ ...config, 'session-idle-seconds': 600 }));
    const [again] = (await logged(stack.worker.err, 'Worker config reloaded', 2)).slice(1);
    expect(again).toMatchObject({ endedSessions: 0, trigger: 'file' });
    // SIGHUP ("reload now") on an unchanged file changes nothing, and Deno keeps running.
    stack.worker.process.child.kill('SIGHUP');
    expect(await pidOf(bob)).toBe(bobPid);
    expect(stack.worker.process.child.exitCode).toBeNull();
  });
  it('follows a config file deleted and written again later, as a deploy that removes and rewrites it does (review s21)', async () => {
    const file = stack.worker.configFile;
    const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    const count = (text: string) => stack.worker.err.filter(msg(text)).length;
    const [refusedBefore, reloadedBefore] = [count('Worker config refused: the config in force stays'), count('Worker config reloaded')];
    rmSync(file);
    // Written only once the worker found it missing: the watch on the old file is gone by then.
    await logged(stack.worker.err, 'Worker config refused: the config in force stays', refusedBefore + 1);
    writeFileSync(file, JSON.stringify({ ...config, 'session-idle-seconds': 700 }));
    const [back] = (await logged(stack.worker.err, 'Worker config reloaded', reloadedBefore + 1)).slice(reloadedBefore);
    expect(back).toMatchObject({ endedSessions: 0, trigger: 'file' });

    // Gone for longer: once the worker says it looks for the file every second, it still finds it.
    rmSync(file);
    await logged(stack.worker.err, 'Worker config file missing: looking for it every second, the config in force stays', 1);
    writeFileSync(file, JSON.stringify({ ...config, 'session-idle-seconds': 800 }));
    const [later] = (await logged(stack.worker.err, 'Worker config reloaded', reloadedBefore + 2)).slice(reloadedBefore + 1);
    expect(later).toMatchObject({ endedSessions: 0, trigger: 'file' });
  });
});

describe('live sidecar config dir', () => {
  const dir = () => join(stack.dir, 'sidecar');
  const mcpFile = () => join(dir(), 'mcp-servers', 'mcp.json');

  it('ends only the sessions whose server or profile revision changed, and refuses an invalid dir keeping the old one', async () => {
    const bob = await session('pid', stack.tokens.bob!);
    const dana = await session('pid', stack.tokens.dana!);
    const alice = await session('faults', stack.tokens.alice!);
    const bobPid = await pidOf(bob);
    await pidOf(dana);
    await echoes(alice);

    // The faults server's entry changes: only alice's session on it ends.
    const servers = JSON.parse(readFileSync(mcpFile(), 'utf8')) as { mcpServers: Record<string, { env?: Record<string, string> }> };
    servers.mcpServers.faults!.env = { CHANGED: '1' };
    writeFileSync(mcpFile(), JSON.stringify(servers));
    const [first] = await logged(stack.sidecar.err, 'Sidecar config reloaded', 1);
    expect(first).toMatchObject({ endedServers: 1 });
    await expect(echoes(alice)).rejects.toThrow();
    expect(await pidOf(bob)).toBe(bobPid);
    const danaPid = await pidOf(dana);

    // dana's profile changes revision: her session ends (the worker still pins the old one); bob's goes on.
    writeFileSync(join(dir(), 'trust-profiles', 'tools.json'), JSON.stringify({ 'restricted-mcp-tool-call-schemas': [{ properties: { toolName: { const: 'crash' } }, required: ['toolName'] }] }));
    const [second] = await logged(stack.sidecar.err, 'Sidecar config reloaded', 2);
    expect(second).toMatchObject({ endedServers: 1 });
    await expect(pidOf(dana)).rejects.toThrow();
    await expect.poll(() => livePids([danaPid]), { timeout: 15_000 }).toEqual([]);
    expect(await pidOf(bob)).toBe(bobPid);

    // An invalid mcp.json is refused in check's words; the accepted one stays in force for new sessions too.
    writeFileSync(mcpFile(), JSON.stringify({ mcpServers: { ...servers.mcpServers, pid: { command: '' } } }));
    const [refused] = await logged(stack.sidecar.err, 'Sidecar config refused: the config in force stays', 1);
    const expected = (await checkConfigDir(dir())).filter((r) => r.issues.length > 0).map((r) => describeFileProblems(r.file, r.kind, r.issues));
    expect(expected).toEqual([`${mcpFile()}: 1 problem (mcp.json)\n  mcpServers.pid.command: must not be empty`]);
    expect(refused!.problems).toEqual(expected);
    expect(await pidOf(bob)).toBe(bobPid);
    expect(await pidOf(await session('pid', stack.tokens.bob!))).toBeGreaterThan(0);
    expect(stack.sidecar.process.child.exitCode).toBeNull();
  });
});

describe('live worker config under Node (switchyard worker --runtime node)', () => {
  it('reloads on SIGHUP and on a file change, keeps the session it does not affect, and refuses an invalid config', async () => {
    const procs = new ProcessSet();
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-live-node-'));
    try {
      mkdirSync(join(dir, 'mcp-servers'));
      writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { pid: fixtureServer('pid-server.mjs') } }));
      writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ 'allow-uncontained': true }));
      const file = join(dir, 'worker.json');
      const [aliceToken, bobToken] = [randomCredential('alice-token'), randomCredential('bob-token')];
      const config = { agents: [agentEntry({ name: 'alice', token: aliceToken, servers: ['pid'] })], servers: { pid: { executor: { type: 'local' } } } };
      writeFileSync(file, JSON.stringify(config));
      const worker = watch(procs.spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'worker', '--runtime', 'node', '--config', file, '--port', '0']));
      const url = (await waitForOutput(worker.process, worker.process.stdout, /"url":"([^"]+)"/, 'the Node worker'))[1]!;
      const alice = await connectClient(`${url}/servers/pid/mcp`, aliceToken);
      const alicePid = await pidOf(alice);

      // SIGHUP is "reload now", never the end of the worker.
      writeFileSync(file, JSON.stringify({ ...config, agents: [...config.agents, agentEntry({ name: 'bob', token: bobToken, servers: ['pid'] })] }));
      worker.process.child.kill('SIGHUP');
      const [reloaded] = await logged(worker.err, 'Worker config reloaded', 1);
      expect(reloaded).toMatchObject({ endedSessions: 0 });
      const bob = await connectClient(`${url}/servers/pid/mcp`, bobToken);
      expect(await pidOf(bob)).not.toBe(alicePid);
      expect(await pidOf(alice)).toBe(alicePid);

      writeFileSync(file, JSON.stringify({ ...config, 'session-idle-seconds': -1 }));
      const [refused] = await logged(worker.err, 'Worker config refused: the config in force stays', 1);
      expect(refused!.problems).toEqual(checkFile(file, 'node').issues.map(formatIssue));
      expect(refused!.problems).toEqual(['session-idle-seconds: must be more than 0']);
      expect(await pidOf(bob)).toBeGreaterThan(0);
      worker.process.child.kill('SIGHUP');
      expect(await pidOf(alice)).toBe(alicePid);
      expect(worker.process.child.exitCode).toBeNull();
      for (const client of [alice, bob]) await closeClient(client);
    } finally {
      await procs.stopAll();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
