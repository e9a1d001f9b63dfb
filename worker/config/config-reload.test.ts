import { describe, expect, it } from 'vitest';
import { hostEndReason, hostsToUnlink, sessionEndReason } from './config-reload.ts';
import { parseWorkerConfig, type WorkerConfig } from './worker-config.ts';

const HEX = (c: string) => c.repeat(64);
const KEY_A = `ed25519:${'A'.repeat(43)}`;
const KEY_B = `ed25519:${'Q'.repeat(43)}`;
const KEY_C = `ed25519:${'g'.repeat(43)}`;

function config(patch: (raw: Record<string, any>) => void = () => {}): WorkerConfig {
  const raw: Record<string, any> = {
    agents: [
      { name: 'alice', 'token-sha256': HEX('a'), servers: ['files', 'docs'] },
      { name: 'bob', 'token-sha256': HEX('b'), servers: ['files'], 'trust-context': { 'trust-profile-ref': 'work', 'trust-profile-revision': `sha256:${HEX('1')}` } },
    ],
    hosts: [{ 'entity-id': 'laptop', 'public-key': KEY_A }, { 'entity-id': 'desk', 'public-key': KEY_C }],
    servers: {
      files: { executor: { type: 'reverse-http', 'entity-id': 'laptop' } },
      docs: { executor: { type: 'reverse-http', 'entity-id': 'desk' } },
    },
  };
  patch(raw);
  return parseWorkerConfig(raw, { runtime: 'edge' });
}

const before = config();
const alice = { agent: 'alice', servers: ['files', 'docs'] };
const bob = { agent: 'bob', servers: ['files'] };

describe('what a worker config change ends', () => {
  it('ends nothing for a change that touches no session (a new agent, a limit, the idle time)', () => {
    const after = config((raw) => {
      raw.agents.push({ name: 'carol', 'token-sha256': HEX('c'), servers: ['docs'] });
      raw['max-sessions-per-agent'] = 2;
      raw['session-idle-seconds'] = 60;
    });
    expect(sessionEndReason(before, after, alice)).toBeNull();
    expect(sessionEndReason(before, after, bob)).toBeNull();
  });

  it('ends the sessions of a removed agent, or one whose token or trust context changed, and only theirs', () => {
    expect(sessionEndReason(before, config((raw) => raw.agents.splice(0, 1)), alice)).toBe('agent removed');
    expect(sessionEndReason(before, config((raw) => (raw.agents[0]['token-sha256'] = HEX('d'))), alice)).toBe('agent token changed');
    const revised = config((raw) => (raw.agents[1]['trust-context']['trust-profile-revision'] = `sha256:${HEX('2')}`));
    expect(sessionEndReason(before, revised, bob)).toBe('agent trust context changed');
    expect(sessionEndReason(before, revised, alice)).toBeNull();
  });

  it('ends a session whose server is gone, changed or no longer allowed; a session without it goes on', () => {
    const moved = config((raw) => (raw.servers.docs.executor['entity-id'] = 'laptop'));
    expect(sessionEndReason(before, moved, alice)).toBe('server "docs" changed');
    expect(sessionEndReason(before, moved, bob)).toBeNull();
    const narrowed = config((raw) => (raw.agents[0].servers = ['files']));
    expect(sessionEndReason(before, narrowed, alice)).toBe('server "docs" no longer allowed');
    expect(sessionEndReason(before, narrowed, { agent: 'alice', servers: ['files'] })).toBeNull();
  });

  it('ends no /mcp session for a change to its servers, which the session follows itself; only a change to who the agent is ends it', () => {
    // An aggregate session takes the new config (`reconfigure`): servers taken, given or bound elsewhere are availability.
    const aggregate = { ...alice, reconfigure: () => Promise.resolve() };
    expect(sessionEndReason(before, config((raw) => (raw.servers.docs.executor['entity-id'] = 'laptop')), aggregate)).toBeNull();
    expect(sessionEndReason(before, config((raw) => (raw.agents[0].servers = ['files'])), aggregate)).toBeNull();
    expect(sessionEndReason(before, config((raw) => {
      raw.agents[0].servers = ['files'];
      raw.agents[1].servers = ['files'];
      delete raw.servers.docs;
    }), aggregate)).toBeNull();
    expect(sessionEndReason(before, config((raw) => (raw.agents[0].servers = ['files', 'docs', 'files2'], raw.servers.files2 = raw.servers.files)), { ...aggregate, servers: ['files'] })).toBeNull();
    expect(sessionEndReason(before, config((raw) => raw.agents.splice(0, 1)), aggregate)).toBe('agent removed');
    expect(sessionEndReason(before, config((raw) => (raw.agents[0]['token-sha256'] = HEX('d'))), aggregate)).toBe('agent token changed');
    const trusted = config((raw) => (raw.agents[0]['trust-context'] = { 'trust-profile-ref': 'work', 'trust-profile-revision': `sha256:${HEX('1')}` }));
    expect(sessionEndReason(before, trusted, aggregate)).toBe('agent trust context changed');
  });

  it('drops the links of hosts removed or given another key', () => {
    const after = config((raw) => {
      raw.hosts = [{ 'entity-id': 'laptop', 'public-key': KEY_B }];
      raw.servers.docs.executor['entity-id'] = 'laptop';
    });
    expect(hostsToUnlink(before, after).sort()).toEqual(['desk', 'laptop']);
    expect(hostsToUnlink(before, config())).toEqual([]);
  });

  it('ends the one-server sessions on a host given another key, before its link drops, but no /mcp session', () => {
    const rekeyed = config((raw) => (raw.hosts[0]['public-key'] = KEY_B));
    expect(hostEndReason(before, rekeyed, bob)).toBe('host "laptop" of server "files" has a new key');
    expect(hostEndReason(before, rekeyed, { agent: 'alice', servers: ['docs'] })).toBeNull();
    expect(hostEndReason(before, rekeyed, { ...alice, reconfigure: () => {} })).toBeNull();
    expect(hostEndReason(before, config(), bob)).toBeNull();
  });
});
