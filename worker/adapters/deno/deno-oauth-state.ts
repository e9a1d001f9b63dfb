/**
 * The built-in authorization server's state under Deno: one JSON file in the state dir
 * (`SWITCHYARD_STATE_DIR/oauth-state.json`, mode 0600, replaced atomically through a temporary
 * file), and `Deno.resolveDns` so a Client ID Metadata Document host that resolves to a private
 * or loopback address is refused before it is fetched.
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
  resolveDns(query: string, type: 'A' | 'AAAA'): Promise<string[]>;
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

/** Every A and AAAA address of a name (an IP literal resolves to itself). */
export function denoResolver(deno: DenoStateApi): (hostname: string) => Promise<string[]> {
  return async (hostname) => {
    if (/^[\d.]+$/.test(hostname) || hostname.includes(':')) return [hostname];
    const settled = await Promise.allSettled([deno.resolveDns(hostname, 'A'), deno.resolveDns(hostname, 'AAAA')]);
    const addresses = settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    if (addresses.length === 0 && settled[0].status === 'rejected') throw settled[0].reason as Error;
    return addresses;
  };
}
