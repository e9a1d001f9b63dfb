/**
 * The built-in OAuth server's state for the worker under Node (`switchyard worker --runtime
 * node`, the single-machine mode): the same file store as under Deno, `<state dir>/oauth-state.json`
 * (0600, replaced atomically), with Node's file system and network injected, since `worker/`
 * itself stays web-standard.
 *
 * @module
 */
import { mkdirSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { OAuthRuntime } from '../worker/app.ts';
import type { WorkerConfig } from '../worker/config/worker-config.ts';
import { FileOAuthStore } from '../worker/auth/oauth/store/file-oauth-store.ts';
import { OAUTH_STATE_FILE } from '../worker/adapters/deno/deno-oauth-state.ts';
import { parseServerKeys, SERVER_KEYS_ENV } from '../worker/auth/oauth/server-key.ts';
import { nodeDocumentNetwork } from './node-document-network.ts';

export async function openNodeOAuthStore(stateDir: string): Promise<FileOAuthStore> {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const path = join(stateDir, OAUTH_STATE_FILE);
  return FileOAuthStore.open({
    async read() {
      try {
        return await readFile(path, 'utf8');
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return null;
        throw error;
      }
    },
    async write(text) {
      const temporary = `${path}.${randomUUID()}.tmp`;
      try {
        await writeFile(temporary, text, { mode: 0o600 });
        await rename(temporary, path);
      } catch (error) {
        // A full disk leaves part of the server's key and grants in a stray file: not kept.
        await rm(temporary, { force: true });
        throw error;
      }
    },
  });
}

/** What a Node worker with `config` needs for OAuth (nothing without an `oauth` section). */
export async function nodeOAuthRuntime(config: WorkerConfig, stateDir: string): Promise<OAuthRuntime | undefined> {
  if (config.oauth === undefined) return undefined;
  const metadataDocuments = { network: nodeDocumentNetwork() };
  if (config.oauth['built-in'] === undefined) return { metadataDocuments };
  const keys = parseServerKeys(process.env[SERVER_KEYS_ENV]);
  return { store: await openNodeOAuthStore(stateDir), metadataDocuments, ...(keys !== undefined ? { keys } : {}) };
}
