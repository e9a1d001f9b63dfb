/**
 * The watcher on a real folder, saved the ways editors save: in place, and by replacing the file
 * (write a new one, rename it over), after which Node 20's recursive watch saw nothing more.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../log.ts';
import { watchConfig, type ConfigWatch } from './config-watcher.ts';

let dir: string;
let watch: ConfigWatch | undefined;
afterEach(() => {
  watch?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A watch of `dir` whose next change can be awaited. */
function watched(recursive: boolean) {
  let wake: (() => void) | undefined;
  watch = watchConfig({ dir, recursive, onChange: () => wake?.(), log: silentLogger });
  return () => new Promise<void>((resolve) => (wake = resolve));
}

describe('watchConfig', () => {
  it('sees every save of a profile, in place or replaced, in a folder of the config dir, and folders made later', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sy-watch-'));
    mkdirSync(join(dir, 'trust-profiles'));
    const profile = join(dir, 'trust-profiles', 'workspace.json');
    writeFileSync(profile, '{}');
    const next = watched(true);
    const replace = (text: string) => {
      writeFileSync(`${profile}.tmp`, text);
      renameSync(`${profile}.tmp`, profile);
    };
    for (const save of [() => replace('{"a":1}'), () => writeFileSync(profile, '{"a":2}'), () => replace('{"a":3}'), () => writeFileSync(profile, '{"a":4}')]) {
      const changed = next();
      save();
      await changed;
    }
    // A folder made after the start, with a config in it at once: seen, whether or not its own watch came first.
    const changed = next();
    mkdirSync(join(dir, 'mcp-servers'));
    writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), '{}');
    await changed;
    const again = next();
    writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), '{"mcpServers":{}}');
    await again;
    // A folder removed (a reload: what it held is gone) and put back: the new one is watched.
    const removed = next();
    rmSync(join(dir, 'mcp-servers'), { recursive: true });
    await removed;
    const back = next();
    mkdirSync(join(dir, 'mcp-servers'));
    await back;
    const edited = next();
    writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), '{"mcpServers":{"a":{}}}');
    await edited;
  });

  it('watches the per-user layer three folders down', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sy-watch-'));
    mkdirSync(join(dir, 'users', 'alice', 'mcp-servers'), { recursive: true });
    const next = watched(true);
    const changed = next();
    writeFileSync(join(dir, 'users', 'alice', 'mcp-servers', 'mcp.json'), '{}');
    await changed;
  });

  it('watches folders the config dir links to, as stow or home-manager lay it out (review s20)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sy-watch-'));
    const kept = join(dir, 'dotfiles');
    mkdirSync(join(kept, 'trust-profiles'), { recursive: true });
    mkdirSync(join(kept, 'alice', 'mcp-servers'), { recursive: true });
    mkdirSync(join(dir, 'config', 'users'), { recursive: true });
    symlinkSync(join(kept, 'trust-profiles'), join(dir, 'config', 'trust-profiles'));
    symlinkSync(join(kept, 'alice'), join(dir, 'config', 'users', 'alice'));
    let wake: (() => void) | undefined;
    watch = watchConfig({ dir: join(dir, 'config'), recursive: true, onChange: () => wake?.(), log: silentLogger });
    const next = () => new Promise<void>((resolve) => (wake = resolve));
    for (const file of [join(kept, 'trust-profiles', 'work.json'), join(kept, 'alice', 'mcp-servers', 'mcp.json')]) {
      const changed = next();
      writeFileSync(file, '{}');
      await changed;
    }
  });
});
