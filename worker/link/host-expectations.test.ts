import { describe, expect, it } from 'vitest';
import { parseWorkerConfig } from '../config/worker-config.ts';
import { hostExpectations } from './host-expectations.ts';

const REV = (c: string) => `sha256:${c.repeat(64)}`;

describe('hostExpectations', () => {
  it('lists the servers launched on the host and, per pinned revision, the agents that use them', () => {
    const config = parseWorkerConfig(
      {
        agents: [
          { name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['files'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': REV('1') } },
          { name: 'bob', 'token-sha256': 'b'.repeat(64), servers: ['files', 'docs'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': REV('1') } },
          { name: 'carol', 'token-sha256': 'c'.repeat(64), servers: ['notes'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': REV('2') } },
          { name: 'dave', 'token-sha256': 'd'.repeat(64), servers: ['docs'], 'trust-context': { 'trust-profile-ref': 'other', 'trust-profile-revision': REV('3') } },
          { name: 'erin', 'token-sha256': 'e'.repeat(64), servers: ['files'] },
        ],
        hosts: [{ 'entity-id': 'laptop', 'public-key': `ed25519:${'A'.repeat(43)}` }],
        servers: {
          files: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } },
          notes: { executor: { type: 'reverse-http', 'entity-id': 'laptop', target: { type: 'local' } } },
          // Reached from the host, not launched there: its command is not the host's to define.
          docs: { executor: { type: 'reverse-http', 'entity-id': 'laptop', target: { type: 'http', url: 'https://203.0.113.9/mcp' } } },
        },
      },
      { runtime: 'edge' },
    );
    expect(hostExpectations(config, 'laptop')).toEqual({
      servers: ['files', 'notes'],
      'trust-profiles': [
        { ref: 'workspace', revision: REV('1'), agents: ['alice', 'bob'] },
        { ref: 'workspace', revision: REV('2'), agents: ['carol'] },
      ],
    });
    expect(hostExpectations(config, 'desk')).toEqual({ servers: [], 'trust-profiles': [] });
  });
});
