/**
 * The servers a host runs, read as its sidecar reads them: every `mcp.json` layer for this host
 * (machine entries win over user ones, user over defaults), by name. Shared by the workstation's
 * doctor, `check worker.json DIR` and the host entry line, so the three never disagree.
 *
 * @module
 */
import { readJsonFile } from '../sidecar/config/config-file-problems.ts';
import { parseMcpServersFile, serverConfigFiles, type ServerConfig } from '../sidecar/host/server-config.ts';

export interface HostServers {
  /** Each server with the file its winning entry is in. */
  readonly servers: Map<string, { readonly server: ServerConfig; readonly file: string }>;
  /** The layers that exist but cannot be read, each with why. */
  readonly problems: readonly { readonly file: string; readonly message: string }[];
}

/**
 * @param dir The sidecar config dir.
 * @param entityId The host's entity id (selects `machines/<entity-id>/`).
 * @param user The user whose `users/<user>/` layer applies.
 */
export function hostServers(dir: string, entityId: string, user: string): HostServers {
  const servers = new Map<string, { server: ServerConfig; file: string }>();
  const problems: { file: string; message: string }[] = [];
  for (const { file } of serverConfigFiles(dir, entityId, user)) {
    const read = readJsonFile(file);
    if (!read.ok) {
      if (!read.missing) problems.push({ file, message: read.issue.message });
      continue;
    }
    try {
      for (const [name, server] of parseMcpServersFile(read.json, dir)) if (!servers.has(name)) servers.set(name, { server, file });
    } catch (error) {
      problems.push({ file, message: (error as Error).message });
    }
  }
  return { servers, problems };
}
