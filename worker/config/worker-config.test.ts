import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/validation.ts';
import { DEFAULT_SESSION_IDLE_SECONDS, parseWorkerConfig, parseWorkerConfigText, type WorkerRuntime } from './worker-config.ts';
import { EDGE_LOCAL_SERVER_MESSAGE } from './config-checks.ts';

const HASH = 'a'.repeat(64);
/** A well-formed host public key (32 bytes, canonical base64url). */
const KEY = `ed25519:${'A'.repeat(43)}`;
const KEY2 = `ed25519:${'Q'.repeat(42)}A`;
const REVISION = `sha256:${'c'.repeat(64)}`;

function designExample(): Record<string, unknown> {
  return {
    agents: [{
      name: 'alice',
      'token-sha256': HASH,
      servers: ['everything', 'files', 'docs'],
      'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': REVISION, containment: 'required' },
    }],
    hosts: [{ 'entity-id': 'alice-laptop', 'public-key': KEY }],
    servers: {
      everything: { executor: { type: 'user-computer-profile', 'entity-id': 'alice-laptop', target: { type: 'local' } } },
      files: { executor: { type: 'reverse-http', 'entity-id': 'alice-laptop' } },
      docs: { executor: { type: 'http', url: 'https://docs.example.com/mcp' } },
    },
  };
}

function issuesOf(input: unknown, runtime: WorkerRuntime = 'edge'): string[] {
  try {
    parseWorkerConfig(input, { runtime });
  } catch (error) {
    if (error instanceof ValidationError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  return [];
}

describe('worker config', () => {
  it('accepts the DESIGN §4 example and fills the defaults', () => {
    const config = parseWorkerConfig(designExample(), { runtime: 'edge' });
    expect(config.agents[0]!.name).toBe('alice');
    expect(config.servers.everything!.executor).toEqual({ type: 'user-computer-profile', 'entity-id': 'alice-laptop', target: { type: 'local' } });
    expect(config['session-idle-seconds']).toBe(DEFAULT_SESSION_IDLE_SECONDS);
    expect(config['allowed-hosts']).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(config['allowed-origins']).toEqual(['localhost', '127.0.0.1', '[::1]']);
  });

  it('takes a host by its public key only, checked for form, and an optional public-url', () => {
    const input = designExample();
    expect(parseWorkerConfig({ ...input, 'public-url': 'https://yard.example.com' }, { runtime: 'edge' })['public-url']).toBe('https://yard.example.com');
    const hosts = input.hosts as Array<Record<string, unknown>>;
    hosts.push({ 'entity-id': 'bob', 'public-key': 'ed25519:short' }, { 'entity-id': 'carol', 'secret-sha256': HASH }, { 'entity-id': 'dave', 'public-key': KEY.slice(8) });
    const issues = issuesOf({ ...input, 'public-url': 'ftp://yard.example.com' });
    const fix = 'must be "ed25519:" followed by 43 base64url characters: the "public-key" printed by `switchyard sidecar init`';
    expect(issues).toContain(`hosts[1].public-key: ${fix}`);
    expect(issues).toContain(`hosts[3].public-key: ${fix}`);
    expect(issues).toContain('hosts[2].secret-sha256: unknown key');
    expect(issues).toContain('public-url: must be an http: or https: URL');
  });

  it('takes public-url as an origin alone, and over https wherever the built-in OAuth server takes tokens off this machine', () => {
    const input = designExample();
    expect(parseWorkerConfig({ ...input, 'public-url': 'https://yard.example.com/' }, { runtime: 'edge' })['public-url']).toBe('https://yard.example.com/');
    for (const url of ['https://yard.example.com/switchyard', 'https://yard.example.com/?x=1', 'https://me@yard.example.com']) {
      expect([url, issuesOf({ ...input, 'public-url': url })]).toEqual([url, ["public-url: must be the worker's origin alone (scheme, host and port), without a path, query or user name"]]);
    }
    const oauth = { oauth: { 'built-in': {} } };
    expect(issuesOf({ ...input, ...oauth, 'public-url': 'http://yard.lan:8787' })).toEqual([
      "public-url: must be https: with oauth.built-in, whose consent page takes agent tokens (plain http is for this machine's loopback only): put the worker behind TLS",
    ]);
    expect(parseWorkerConfig({ ...input, ...oauth, 'public-url': 'http://127.0.0.1:8787' }, { runtime: 'edge' })['public-url']).toBe('http://127.0.0.1:8787');
    expect(parseWorkerConfig({ ...input, 'public-url': 'http://yard.lan:8787' }, { runtime: 'edge' })['public-url']).toBe('http://yard.lan:8787');
  });

  it('lowercases hash hex so either case matches', () => {
    const input = designExample();
    (input.agents as Array<Record<string, unknown>>)[0]!['token-sha256'] = 'A'.repeat(64);
    expect(parseWorkerConfig(input, { runtime: 'edge' }).agents[0]!['token-sha256']).toBe(HASH);
  });

  it('reports every problem at once as path: message, unknown keys included', () => {
    const input = designExample();
    input.extra = true;
    const agent = (input.agents as Array<Record<string, unknown>>)[0]!;
    agent['token-sha256'] = 'nothex';
    agent.servers = ['everything', 'ghost'];
    (input.servers as Record<string, unknown>).files = { executor: { type: 'reverse-http', 'entity-id': 'bob-desktop' } };
    (input.servers as Record<string, unknown>).bad = { executor: { type: 'ftp' } };
    const issues = issuesOf(input);
    expect(issues).toContain('extra: unknown key');
    expect(issues).toContain('agents[0].token-sha256: must be 64 hex digits, a token\'s sha-256 (switchyard agent add writes an agent\'s; of any token: printf %s TOKEN | sha256sum)');
    expect(issues).toContain('agents[0].servers[1]: unknown server "ghost": define it under "servers"');
    expect(issues).toContain('servers.files.executor.entity-id: unknown host "bob-desktop": add it to "hosts"');
    expect(issues.some((i) => i.startsWith('servers.bad.executor.type: unknown descriptor type "ftp"'))).toBe(true);
  });

  it('rejects duplicate agents, tokens, hosts and listed servers', () => {
    const input = designExample();
    const agents = input.agents as Array<Record<string, unknown>>;
    agents.push({ ...agents[0]!, servers: ['docs', 'docs'] });
    (input.hosts as unknown[]).push({ 'entity-id': 'alice-laptop', 'public-key': KEY2 });
    const issues = issuesOf(input);
    expect(issues).toContain('agents[1].name: duplicate agent name "alice": agents[0] has it too');
    expect(issues).toContain('agents[1].token-sha256: same token hash as agents[0]: each agent needs its own token');
    expect(issues).toContain('agents[1].servers[1]: server "docs" is listed twice');
    expect(issues).toContain('hosts[1].entity-id: duplicate host "alice-laptop"');
  });

  it('rejects one public key on two hosts', () => {
    const input = designExample();
    const hosts = input.hosts as Array<Record<string, unknown>>;
    hosts.push({ 'entity-id': 'bob-desktop', 'public-key': hosts[0]!['public-key'] });
    expect(issuesOf(input).filter((i) => i.startsWith('hosts['))).toEqual([
      'hosts[1].public-key: same public key as hosts[0]: run switchyard sidecar init on each host and use the key it prints',
    ]);
  });

  it('rejects server names that would make namespaced names ambiguous', () => {
    const input = designExample();
    (input.servers as Record<string, unknown>)['my__files'] = { executor: { type: 'http', url: 'http://127.0.0.1:1/mcp' } };
    expect(issuesOf(input)).toContain('servers.my__files: server names must not contain "__" nor end in "_": /mcp joins the server and tool names with "__" and reads the server back up to the first one');
    // files_ + __ + read is files___read, which reads back as server files, tool _read (review s20).
    (input.servers as Record<string, unknown>)['files_'] = { executor: { type: 'http', url: 'http://127.0.0.1:1/mcp' } };
    expect(issuesOf(input)).toContain('servers.files_: server names must not contain "__" nor end in "_": /mcp joins the server and tool names with "__" and reads the server back up to the first one');
  });

  it('rejects a top-level local binding on the edge, naming both fixes, and accepts it in the single-machine Node mode', () => {
    const input = designExample();
    (input.servers as Record<string, unknown>).memory = { executor: { type: 'local' } };
    const issues = issuesOf(input, 'edge');
    expect(issues).toEqual([`servers.memory.executor: ${EDGE_LOCAL_SERVER_MESSAGE}`]);
    expect(EDGE_LOCAL_SERVER_MESSAGE).toContain('switchyard worker --runtime node');
    expect(EDGE_LOCAL_SERVER_MESSAGE).toContain('"type":"user-computer-profile"');
    expect(EDGE_LOCAL_SERVER_MESSAGE).not.toContain('switchyard start');
    expect(issuesOf(input, 'node')).toEqual([]);
  });

  it('rejects a host descriptor nested as a target', () => {
    const input = designExample();
    (input.servers as Record<string, unknown>).hop = {
      executor: { type: 'user-computer-profile', 'entity-id': 'alice-laptop', target: { type: 'reverse-http', 'entity-id': 'alice-laptop' } },
    };
    expect(issuesOf(input)).toContain('servers.hop.executor.target.type: a host can run "local" or reach "http", not "reverse-http"');
  });

  it('checks the optional fields', () => {
    const input = {
      ...designExample(),
      'allowed-hosts': ['switchyard.example.com', 'bad host'],
      'allowed-origins': ['https://app.example.com', 'ftp://x'],
      'session-idle-seconds': 0,
      'request-timeout-seconds': -1,
      'admin-token-sha256': 'xyz',
    };
    const issues = issuesOf(input);
    expect(issues).toContain('allowed-hosts[1]: must be a host name, optionally with ":port"');
    expect(issues).toContain('allowed-origins[1]: must be an origin like "https://app.example.com" or a host name');
    expect(issues.some((i) => i.startsWith('session-idle-seconds: '))).toBe(true);
    expect(issues.some((i) => i.startsWith('request-timeout-seconds: '))).toBe(true);
    expect(issues.some((i) => i.startsWith('admin-token-sha256: '))).toBe(true);
  });

  it('refuses a request-timeout-seconds past what a timer can wait, which would end every request at once', () => {
    expect(issuesOf({ ...designExample(), 'request-timeout-seconds': 3e6 })).toEqual([
      'request-timeout-seconds: must be at most 2147483 (about 24 days); leave it unset for no limit on one request on /servers/<name>/mcp',
    ]);
    expect(issuesOf({ ...designExample(), 'request-timeout-seconds': 2_147_483 })).toEqual([]);
  });

  it('reports a trust context missing its revision and an unknown containment value', () => {
    const input = designExample();
    (input.agents as Array<Record<string, unknown>>)[0]!['trust-context'] = { 'trust-profile-ref': 'workspace', containment: 'sometimes' };
    const issues = issuesOf(input);
    expect(issues.some((i) => i.startsWith('agents[0].trust-context.trust-profile-revision: '))).toBe(true);
    expect(issues.some((i) => i.startsWith('agents[0].trust-context.containment: '))).toBe(true);
  });

  it('still cross-checks servers and hosts when another part is malformed', () => {
    const input = designExample();
    input.hosts = 'nope';
    const issues = issuesOf(input);
    expect(issues.some((i) => i.startsWith('hosts: '))).toBe(true);
    expect(issues).toContain('servers.files.executor.entity-id: unknown host "alice-laptop": add it to "hosts"');
  });

  it('reports JSON syntax errors as a root problem', () => {
    expect(() => parseWorkerConfigText('{"agents":', { runtime: 'edge' })).toThrow(/^Invalid worker config: \(root\): not valid JSON/);
  });

  it('refuses a key given twice, which JSON.parse would settle silently for the second', () => {
    const text = JSON.stringify(designExample(), null, 2).replace('"docs": {', '"files": { "executor": { "type": "http", "url": "https://elsewhere.example.com/mcp" } },\n    "docs": {');
    expect(() => parseWorkerConfigText(text, { runtime: 'edge' })).toThrow('Invalid worker config: servers.files: defined twice (line 34 and line 40): JSON keeps only the last, so remove one');
  });
});

describe('oauth section', () => {
  const base = { agents: [], servers: {} };
  it('accepts the built-in server with defaults, and an external issuer', () => {
    const config = parseWorkerConfig({ ...base, oauth: { 'built-in': {} } }, { runtime: 'edge' });
    expect(config.oauth?.['built-in']).toEqual({ 'access-token-seconds': 3600, 'refresh-token-days': 30, 'client-id-metadata-documents': true, 'dynamic-client-registration': true });
    const ext = parseWorkerConfig({ ...base, oauth: { 'external-issuer': { issuer: 'https://login.example.com' } } }, { runtime: 'edge' });
    expect(ext.oauth?.['external-issuer']?.['agent-claim']).toBe('sub');
  });

  it('reports bad oauth settings as path: message', () => {
    const issues = (input: unknown) => {
      try {
        parseWorkerConfig({ ...base, oauth: input }, { runtime: 'edge' });
        return [];
      } catch (error) {
        return (error as ValidationError).issues.map((i) => `${i.path}: ${i.message}`);
      }
    };
    expect(issues({})).toEqual(['oauth: needs "built-in", "external-issuer" or both']);
    expect(issues({ 'external-issuer': { issuer: 'http://login.example.com' } })).toEqual(['oauth.external-issuer.issuer: must be an https: URL (http: only on this machine\'s loopback)']);
    expect(issues({ 'built-in': { 'access-token-seconds': 5, extra: 1 } })).toEqual(expect.arrayContaining(['oauth.built-in.extra: unknown key', expect.stringMatching(/^oauth\.built-in\.access-token-seconds: /)]));
  });
});
