import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/validation.ts';
import { parseMcpServersFile, resolveServerConfig, serverConfigFiles } from './server-config.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function configDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-servers-'));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

const scope = { entityId: 'alice-laptop', user: 'alice' };

describe('server config resolution', () => {
  it('takes the machine file first, then the user file, then the defaults', async () => {
    const dir = configDir({
      'machines/alice-laptop/mcp-servers/mcp.json': { mcpServers: { files: { command: 'machine-files' } } },
      'machines/other-host/mcp-servers/mcp.json': { mcpServers: { docs: { command: 'other-docs' } } },
      'users/alice/mcp-servers/mcp.json': { mcpServers: { files: { command: 'user-files' }, docs: { command: 'user-docs' } } },
      'mcp-servers/mcp.json': { mcpServers: { files: { command: 'default-files' }, docs: { command: 'default-docs' }, memory: { command: 'default-memory' } } },
    });
    const pick = async (name: string) => {
      const r = await resolveServerConfig(dir, scope, name);
      return [r.source, r.config.kind === 'stdio' ? r.config.command : r.config.url];
    };
    expect(await pick('files')).toEqual(['machine', 'machine-files']);
    expect(await pick('docs')).toEqual(['user', 'user-docs']);
    expect(await pick('memory')).toEqual(['defaults', 'default-memory']);
  });

  it('never reads a users/ layer for a user name holding ".." or a slash', () => {
    for (const user of ['..', 'a..b', 'a/b', '.hidden']) {
      expect(serverConfigFiles('/cfg', 'alice-laptop', user).map((l) => l.source)).toEqual(['machine', 'defaults']);
    }
    expect(serverConfigFiles('/cfg', 'alice-laptop', 'alice.b').map((l) => l.file)).toContain('/cfg/users/alice.b/mcp-servers/mcp.json');
  });

  it('says server-not-found for a name no layer defines, and skips missing files', async () => {
    const dir = configDir({ 'mcp-servers/mcp.json': { mcpServers: {} } });
    await expect(resolveServerConfig(dir, scope, 'nothing')).rejects.toMatchObject({ reason: 'server-not-found', message: expect.stringContaining('"nothing"') });
    await expect(resolveServerConfig(configDir({}), scope, 'x')).rejects.toMatchObject({ reason: 'server-not-found' });
  });

  it('reads both entry shapes, with the type key clients write, and fills defaults', () => {
    const servers = parseMcpServersFile(
      {
        mcpServers: {
          everything: { type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], env: { A: '1' }, cwd: 'work' },
          plain: { command: '/usr/bin/cat' },
          docs: { type: 'streamable-http', url: 'https://docs.example.com/mcp', headers: { 'x-key': 'k' } },
          remote: { url: 'http://127.0.0.1:3001/mcp' },
        },
      },
      '/cfg',
    );
    expect(Object.fromEntries(servers)).toEqual({
      everything: { kind: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], env: { A: '1' }, cwd: '/cfg/work' },
      plain: { kind: 'stdio', command: '/usr/bin/cat', args: [], env: {} },
      docs: { kind: 'http', url: 'https://docs.example.com/mcp', headers: { 'x-key': 'k' } },
      remote: { kind: 'http', url: 'http://127.0.0.1:3001/mcp', headers: {} },
    });
  });

  it('refuses an env variable with a NUL byte, an "=" in its name or an empty name, naming where (review s19)', () => {
    expect(() => parseMcpServersFile({ mcpServers: { files: { command: '/bin/cat', env: { X: 'a\0--ro-bind\0/etc\0/leak' } } } })).toThrow(/mcpServers\.files\.env\.X: must not hold a NUL byte/);
    for (const name of ['A=B', '', 'X\0Y']) {
      expect(() => parseMcpServersFile({ mcpServers: { files: { command: '/bin/cat', env: { [name]: 'v' } } } })).toThrow(/mcpServers\.files\.env\..*: Invalid key in record/);
    }
  });

  it('reads an entry\'s own trust floor ("trust-profile") on both shapes, and checks it as a profile name', () => {
    const servers = parseMcpServersFile({ mcpServers: { files: { command: '/bin/cat', 'trust-profile': 'strict' }, docs: { url: 'https://docs.example.com/mcp', 'trust-profile': 'web' } } });
    expect(servers.get('files')).toMatchObject({ kind: 'stdio', trustProfile: 'strict' });
    expect(servers.get('docs')).toMatchObject({ kind: 'http', trustProfile: 'web' });
    expect(() => parseMcpServersFile({ mcpServers: { files: { command: '/bin/cat', 'trust-profile': '../x' } } })).toThrow(/mcpServers\.files\.trust-profile: must be 1-64 letters/);
  });

  it('rejects unknown keys and bad values as path: message, every problem at once', () => {
    const bad = {
      mcpServers: {
        a: { command: 'x', shell: true },
        b: { url: 'ftp://x' },
        'c.d': { command: 'x' },
        e: { command: '' },
      },
      extra: 1,
    };
    expect(() => parseMcpServersFile(bad)).toThrow(/extra: unknown key/);
    // A problem of the file's own keys hides none of its servers' (QA s29: only the first was said).
    expect(() => parseMcpServersFile(bad)).toThrow(/mcpServers\.a\.shell: unknown key/);
    expect(() => parseMcpServersFile({ globalShortcut: 'x', mcpServers: { a: { comand: 'node' } } })).toThrow('Invalid mcp.json: globalShortcut: unknown key; mcpServers.a.comand: unknown key (did you mean "command"?)');
    const error = (() => {
      try {
        parseMcpServersFile({ mcpServers: bad.mcpServers });
      } catch (e) {
        return e as ValidationError;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect(error!.issues.map((i) => i.path)).toEqual(['mcpServers.a.shell', 'mcpServers.b.url', 'mcpServers.c.d', 'mcpServers.e.command']);
  });

  it('refuses a server name holding "__", which the worker could never route to, in the worker config\'s words', () => {
    let error: unknown;
    try {
      parseMcpServersFile({ mcpServers: { a__b: { command: 'x' }, ok: { command: 'y' } } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues).toEqual([{ path: 'mcpServers.a__b', message: 'server names must not contain "__" nor end in "_": /mcp joins the server and tool names with "__" and reads the server back up to the first one' }]);
    expect(parseMcpServersFile({ mcpServers: { a_b: { command: 'x' }, 'a-_b': { command: 'x' } } }).size).toBe(2);
  });

  it('reports an invalid file as a local validation error naming the file', async () => {
    const dir = configDir({ 'mcp-servers/mcp.json': '{ not json' });
    await expect(resolveServerConfig(dir, scope, 'x')).rejects.toThrow(/mcp-servers\/mcp\.json.*not valid JSON: .* \(line 1 column 3\)/);
  });

  it('names a layer it cannot read in the words check uses, not an errno, and does not pass over it', async () => {
    const dir = configDir({ 'mcp-servers/mcp.json': '{"mcpServers": {"x": {"command": "a"}}}', [`users/${scope.user}/mcp-servers/mcp.json/kept`]: '' });
    const file = join(dir, 'users', scope.user, 'mcp-servers', 'mcp.json');
    await expect(resolveServerConfig(dir, scope, 'x')).rejects.toThrow(`Invalid mcp.json "${file}": (root): not a file`);
  });

  it('refuses a server defined twice in one file, naming it', async () => {
    const dir = configDir({ 'mcp-servers/mcp.json': '{"mcpServers": {\n  "x": {"command": "a"},\n  "x": {"command": "b"}\n}}' });
    await expect(resolveServerConfig(dir, scope, 'x')).rejects.toThrow('mcpServers.x: defined twice (line 2 and line 3): JSON keeps only the last, so remove one');
  });
});
