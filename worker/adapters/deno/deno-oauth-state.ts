/**
 * The built-in authorization server's state under Deno: one JSON file in the state dir
 * (`SWITCHYARD_STATE_DIR/oauth-state.json`, mode 0600, replaced atomically through a temporary
 * file).
 *
 * @module
 */
import { FileOAuthStore } from '../../auth/oauth/store/file-oauth-store.ts';

export const OAUTH_STATE_FILE = 'oauth-state.json';

/** The slice of `Deno` this file uses. */
export interface DenoStateApi {
  readTextFile(path: string): Promise<string>;
  writeTextFile(path: string, data: string, options?: { mode?: number }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
  mkdir(path: string, options?: { recursive?: boolean; mode?: number }): Promise<void>;
  errors: { NotFound: new (...args: never[]) => Error };
}

export async function openDenoOAuthStore(deno: DenoStateApi, stateDir: string): Promise<FileOAuthStore> {
  await deno.mkdir(stateDir, { recursive: true, mode: 0o700 });
  const path = `${stateDir.replace(/\/+$/, '')}/${OAUTH_STATE_FILE}`;
  return FileOAuthStore.open({
    async read() {
      try {
        return await deno.readTextFile(path);
      } catch (error) {
        if (error instanceof deno.errors.NotFound) return null;
        throw error;
      }
    },
    async write(text) {
      const temporary = `${path}.${crypto.randomUUID()}.tmp`;
      try {
        await deno.writeTextFile(temporary, text, { mode: 0o600 });
        await deno.rename(temporary, path);
      } catch (error) {
        // A full disk leaves part of the server's key and grants in a stray file: not kept.
        await deno.remove(temporary).catch(() => {});
        throw error;
      }
    },
  });
}
