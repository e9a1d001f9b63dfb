/**
 * Every config parser under random input throws nothing but the documented `ValidationError`
 * (whose problems are `path: message`), whatever the shape: the fuzz is biased towards the keys
 * each parser looks at so it gets past the first check.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError, parseWith } from '../shared/validation.ts';
import { parseWorkerConfig } from '../worker/config/worker-config.ts';
import { parseSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { parseMcpServersFile } from '../sidecar/host/server-config.ts';
import { trustProfileFileSchema } from '../sidecar/trust/profile-schema.ts';

const value = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined), fc.string(), fc.constant('sha256:' + 'a'.repeat(64)), fc.constant('a'.repeat(64)));
const descriptor = fc.record({ type: fc.constantFrom('local', 'http', 'reverse-http', 'user-computer-profile', 'x'), 'entity-id': fc.string(), url: fc.oneof(fc.webUrl(), fc.string()), target: value }, { requiredKeys: [] });

const workerConfig = fc.record(
  {
    agents: fc.array(fc.record({ name: fc.string(), 'token-sha256': value, servers: fc.array(fc.string()), 'trust-context': fc.dictionary(fc.constantFrom('trust-profile-ref', 'trust-profile-revision', 'containment', 'x'), value) }, { requiredKeys: [] }), { maxLength: 3 }),
    hosts: fc.array(fc.record({ 'entity-id': fc.string(), 'public-key': fc.oneof(value, fc.constant(`ed25519:${'A'.repeat(43)}`)) }, { requiredKeys: [] }), { maxLength: 3 }),
    servers: fc.dictionary(fc.string(), fc.oneof(value, fc.record({ executor: descriptor }))),
    'allowed-hosts': value,
    'session-idle-seconds': value,
  },
  { requiredKeys: [] },
);
const sidecarConfig = fc.record({ worker: fc.oneof(fc.webUrl(), value), 'entity-id': value, 'key-file': value, user: value }, { requiredKeys: [] });
const mcpServers = fc.record({ mcpServers: fc.dictionary(fc.string(), fc.oneof(value, fc.record({ command: value, args: value, env: value, cwd: value, url: value, type: value }, { requiredKeys: [] }))) }, { requiredKeys: [] });
const trustProfile = fc.record(
  {
    'base-trust-profiles': fc.oneof(value, fc.array(fc.oneof(fc.string(), fc.record({ profile: value, 'inheritance-mode': value })))),
    'filesystem-paths': fc.oneof(value, fc.array(fc.record({ 'source-path': fc.oneof(fc.constant('/tmp/x'), value), 'access-mode': value }, { requiredKeys: [] }))),
    'network-capabilities': fc.oneof(value, fc.array(fc.constantFrom('loopback', 'internet-client', 'teleport'))),
    environment: fc.oneof(value, fc.record({ inherit: value, set: value }, { requiredKeys: [] })),
    'allowed-mcp-tool-call-schemas': fc.oneof(value, fc.array(value)),
  },
  { requiredKeys: [] },
);

function onlyValidationErrors(parse: (input: unknown) => unknown) {
  return (input: unknown) => {
    try {
      parse(input);
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      for (const issue of (error as ValidationError).issues) expect(issue.path.length).toBeGreaterThan(0);
    }
  };
}

describe('config parsers under random input', () => {
  it('worker config (edge and single-machine node)', () => {
    const input = fc.oneof(workerConfig, value);
    fc.assert(fc.property(input, onlyValidationErrors((i) => parseWorkerConfig(i, { runtime: 'edge' }))), { numRuns: 600 });
    fc.assert(fc.property(input, onlyValidationErrors((i) => parseWorkerConfig(i, { runtime: 'node' }))), { numRuns: 300 });
  });

  it('sidecar.json', () => {
    fc.assert(fc.property(fc.oneof(sidecarConfig, value), onlyValidationErrors(parseSidecarConfig)), { numRuns: 600 });
  });

  it('mcp.json', () => {
    fc.assert(fc.property(fc.oneof(mcpServers, value), onlyValidationErrors((i) => parseMcpServersFile(i, '/tmp'))), { numRuns: 600 });
  });

  it('trust profile', () => {
    fc.assert(fc.property(fc.oneof(trustProfile, value), onlyValidationErrors((i) => parseWith(trustProfileFileSchema, i, 'trust profile'))), { numRuns: 600 });
  });
});
