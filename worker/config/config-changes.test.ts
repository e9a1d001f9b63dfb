import { describe, expect, it } from 'vitest';
import { parseWorkerConfig, type WorkerConfig } from './worker-config.ts';
import { configChanges, MAX_NAMES } from './config-changes.ts';

const hash = (c: string) => c.repeat(64);
const key = (c: string) => `ed25519:${c.repeat(42)}A`;
const config = (extra: Record<string, unknown> = {}) =>
  parseWorkerConfig({
    agents: [
      { name: 'alice', 'token-sha256': hash('a'), servers: ['files'] },
      { name: 'bob', 'token-sha256': hash('b'), servers: ['files'] },
    ],
    hosts: [{ 'entity-id': 'laptop', 'public-key': key('K') }],
    servers: { files: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } } },
    ...extra,
  }, { runtime: 'edge' });

describe('what a config reload changed', () => {
  it('is nothing for the same config', () => {
    expect(configChanges(config(), config())).toEqual({});
  });

  it('names agents, hosts and servers added, removed, with a new credential or otherwise changed, and the other settings changed, never a value', () => {
    const before = config({ 'public-url': 'https://a.example.com', 'admin-token-sha256': hash('c') });
    const after = config({
      agents: [
        { name: 'alice', 'token-sha256': hash('d'), servers: ['files'] },
        { name: 'carol', 'token-sha256': hash('e'), servers: ['files', 'docs'] },
      ],
      hosts: [{ 'entity-id': 'laptop', 'public-key': key('L') }, { 'entity-id': 'desk', 'public-key': key('M') }],
      servers: { files: { executor: { type: 'user-computer-profile', 'entity-id': 'desk' } }, docs: { executor: { type: 'http', url: 'https://docs.example.com/mcp' } } },
      'public-url': 'https://b.example.com',
      'admin-token-sha256': hash('f'),
      'session-idle-seconds': 60,
    });
    const changes = configChanges(before, after);
    expect(changes).toEqual({
      agents: { added: ['carol'], removed: ['bob'], replacedCredential: ['alice'] },
      hosts: { added: ['desk'], replacedCredential: ['laptop'] },
      servers: { added: ['docs'], changed: ['files'] },
      settings: ['admin-token-sha256', 'public-url', 'session-idle-seconds'],
    });
    expect(JSON.stringify(changes)).not.toMatch(/ddd|fff|LLL|example\.com/);
  });

  it('says an agent\'s servers changed apart from its token, and both when both did', () => {
    const after = config({ agents: [{ name: 'alice', 'token-sha256': hash('a'), servers: [] }, { name: 'bob', 'token-sha256': hash('c'), servers: [] }] });
    expect(configChanges(config(), after)).toEqual({ agents: { replacedCredential: ['bob'], changed: ['alice', 'bob'] } });
  });

  it('is nothing for the same config written in another order: keys, and lists the worker reads as sets', () => {
    const before = config({ agents: [{ name: 'alice', 'token-sha256': hash('a'), servers: ['files', 'docs'] }], servers: { files: { executor: { type: 'http', url: 'https://f.example.com/mcp' } }, docs: { executor: { url: 'https://d.example.com/mcp', type: 'http' } } }, 'allowed-hosts': ['a.example.com', 'b.example.com'] });
    const after = config({ 'allowed-hosts': ['b.example.com', 'a.example.com'], servers: { docs: { executor: { type: 'http', url: 'https://d.example.com/mcp' } }, files: { executor: { url: 'https://f.example.com/mcp', type: 'http' } } }, agents: [{ servers: ['docs', 'files'], 'token-sha256': hash('a'), name: 'alice' }] });
    expect(configChanges(before, after)).toEqual({});
  });

  it('keeps the order of any other list, and reads a setting left out as its default', () => {
    // No list but the sets is in a config today; one added later, ordered, must not hide a change.
    const ordered = (order: string[]) => ({ ...config(), future: order }) as unknown as WorkerConfig;
    expect(configChanges(ordered(['a', 'b']), ordered(['b', 'a']))).toEqual({ settings: ['future'] });
    expect(configChanges(config(), config({ 'link-on-loopback': false }))).toEqual({});
    expect(configChanges(config(), config({ 'link-on-loopback': true }))).toEqual({ settings: ['link-on-loopback'] });
  });

  it('names at most a hundred of each, and says it cut the list', () => {
    const many = Array.from({ length: MAX_NAMES + 5 }, (_, i) => ({ name: `agent-${i}`, 'token-sha256': i.toString(16).padStart(64, '0'), servers: ['files'] }));
    const changes = configChanges(config(), config({ agents: many }));
    expect(changes.agents?.added).toHaveLength(MAX_NAMES);
    expect(changes.agents?.removed).toEqual(['alice', 'bob']);
    expect(changes.truncated).toBe(true);
  });
});

describe('a reload on the record', () => {
  it('writes one audit line with what changed and the sessions it ended, at info', async () => {
    const { composeWorker } = await import('../compose.ts');
    const lines: Array<Record<string, unknown>> = [];
    const worker = composeWorker({ config: config(), auditWrite: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const after = config({ agents: [{ name: 'alice', 'token-sha256': hash('d'), servers: ['files'] }] });
    expect(await worker.reload(after)).toEqual({ endedSessions: 0 });
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'audit', level: 'info', event: 'config', decision: 'allowed', endedSessions: 0, changes: { agents: { removed: ['bob'], replacedCredential: ['alice'] } } }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(hash('d'));
    // The same config again, as a reload of a file edited only in spacing finds it: no line.
    await worker.reload(config({ agents: [{ name: 'alice', 'token-sha256': hash('d'), servers: ['files'] }] }));
    expect(lines).toHaveLength(1);
    await worker.close();
  });
});
