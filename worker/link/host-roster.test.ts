import { describe, expect, it } from 'vitest';
import { parseWorkerConfig } from '../config/worker-config.ts';
import { hostRoster } from './host-roster.ts';

describe('hostRoster', () => {
  it('names each agent that may use a server bound to the host, with those servers, launched there or reached from it', () => {
    const config = parseWorkerConfig(
      {
        agents: [
          { name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['files', 'docs', 'edge'] },
          { name: 'bob', 'token-sha256': 'b'.repeat(64), servers: ['notes'] },
          { name: 'carol', 'token-sha256': 'c'.repeat(64), servers: ['edge'] },
        ],
        hosts: [
          { 'entity-id': 'laptop', 'public-key': `ed25519:${'A'.repeat(43)}` },
          { 'entity-id': 'desk', 'public-key': `ed25519:${'A'.repeat(42)}g` },
        ],
        servers: {
          files: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } },
          docs: { executor: { type: 'reverse-http', 'entity-id': 'laptop', target: { type: 'http', url: 'https://203.0.113.9/mcp' } } },
          notes: { executor: { type: 'reverse-http', 'entity-id': 'desk', target: { type: 'local' } } },
          edge: { executor: { type: 'http', url: 'https://203.0.113.9/mcp' } },
        },
      },
      { runtime: 'edge' },
    );
    expect(hostRoster(config, { entityId: 'laptop' })).toEqual([{ agent: 'alice', servers: ['files', 'docs'] }]);
    expect(hostRoster(config, { entityId: 'desk' })).toEqual([{ agent: 'bob', servers: ['notes'] }]);
    expect(hostRoster(config, { entityId: 'nowhere' })).toEqual([]);
    expect(hostRoster(config, 'local')).toEqual([]);
  });

  it('names the single-machine mode\'s own servers for its local host', () => {
    const config = parseWorkerConfig(
      {
        agents: [{ name: 'alice', 'token-sha256': 'a'.repeat(64), servers: ['files', 'edge'] }],
        hosts: [],
        servers: { files: { executor: { type: 'local' } }, edge: { executor: { type: 'http', url: 'https://203.0.113.9/mcp' } } },
      },
      { runtime: 'node' },
    );
    expect(hostRoster(config, 'local')).toEqual([{ agent: 'alice', servers: ['files'] }]);
  });
});
