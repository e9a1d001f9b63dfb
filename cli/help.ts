/**
 * The help texts of every `switchyard` command, shared by the full CLI (`main.ts`) and the
 * workstation's `dist/sidecar.js` (`sidecar-main.ts`).
 *
 * @module
 */
export const HELP: Record<string, string> = {
  main: `Usage: switchyard <command> [options]

Commands:
  start                         Run the embedded default: worker under Deno, a sidecar, demo servers
  worker --config FILE          Run the edge worker (under Deno) with a worker config
  worker --runtime node --config FILE [--config-dir DIR]
                                One machine, no link: the worker under Node, local servers in-process
  sidecar init --config-dir DIR --worker URL --entity-id ID
                                Set up a workstation: sidecar.json, its key, the worker's hosts entry
  sidecar --config-dir DIR      Run a sidecar that links this workstation to its worker
  sidecar profiles --config-dir DIR
                                Print each trust profile with its current revision
  sidecar host-entry --config-dir DIR
                                Print this host's line for switchyard host add (key, servers, revisions)
  host add --config FILE 'LINE' Add a workstation's host line to a worker config (key, servers, pins)
  agent add NAME --servers a,b [--trust-profile REF] --config FILE
                                Add an agent: a fresh token (printed once), paste-ready client configs
  agent set NAME [--servers a,b] [--trust-profile REF] --config FILE
                                Change an agent's servers or trust profile, keeping its token
  agent pin NAME --config FILE  Pin an agent's trust profile at the revision its hosts reported
  agent remove NAME --config FILE
                                Remove an agent, revoking its token
  admin-token --config FILE     Make a new admin token (printed once): the full status page, any agent's consent
  check [--runtime edge|node|cloudflare] FILE|DIR...
                                Validate a worker config, sidecar.json, mcp.json or trust profile
  check worker.json DIR         Check a worker config against a host's config dir
  doctor [--config-dir DIR [--launch]] [--worker URL]
                                Check bubblewrap, user namespaces, Deno and the worker
  version                       Print this package's version (also --version)

Run "switchyard <command> --help" for a command's options.`,
  workstation: `Usage: node sidecar.js <command> [options]

The workstation's Switchyard: links this machine to its worker and hosts its MCP servers.

Commands:
  sidecar init --config-dir DIR --worker URL --entity-id ID
                                Set up this workstation: sidecar.json, its key, the worker's hosts entry
  sidecar --config-dir DIR      Run a sidecar that links this workstation to its worker
  sidecar host-entry --config-dir DIR
                                Print this host's line for the worker's machine (switchyard host add)
  sidecar profiles --config-dir DIR
                                Print each trust profile with its current revision
  doctor [--config-dir DIR [--launch]] [--worker URL]
                                Check bubblewrap, user namespaces and the worker
  version                       Print this sidecar.js's version (also --version)

The worker, switchyard start and switchyard check come with the full package (npx switchyard-mcp).
Run "node sidecar.js <command> --help" for a command's options.`,
  start: `Usage: switchyard start [--host H] [--port N] [--state-dir DIR] [--public-url URL]

Starts the worker under Deno (default http://127.0.0.1:8787), one sidecar on this machine linked
over reverse HTTP, and demo MCP servers from npm. Prints the agent URL, a token (kept across
restarts in the state dir) and client config, written to <state-dir>/client-config.json.
The worker and sidecar configs in the state dir are regenerated on every start (an edited one is
kept as FILE.previous); run your own with switchyard worker and switchyard sidecar.
HOST and PORT environment variables override the address. Ctrl-C stops everything.

Options:
  --host H          Address to listen on (default 127.0.0.1, or $HOST)
  --port N          Port (default 8787, or $PORT)
  --state-dir DIR   Where tokens, generated configs and the demo folder live (default .switchyard)
  --public-url URL  The https origin a tunnel or proxy forwards to this worker, for clients that
                    connect from the cloud (Claude custom connectors, ChatGPT)`,
  worker: `Usage: switchyard worker --config FILE [--host H] [--port N] [--runtime deno|node] [--config-dir DIR] [--state-dir DIR]

Runs the edge worker. Under Deno by default (the binary from the "deno" npm package). With
--runtime node it is the single-machine deployment: servers bound to a top-level {"type":"local"}
are launched in this process, from DIR's mcp-servers/mcp.json under DIR's trust profiles, with no
sidecar and no link.

Options:
  --config FILE     Worker config (see README: "Worker config")
  --host H          Address to listen on (default 127.0.0.1)
  --port N          Port (default 8787)
  --runtime R       deno (default; also called edge, as check names it) or node
  --config-dir DIR  With --runtime node: where local servers are configured (default: the config file's folder)
  --state-dir DIR   With "oauth": {"built-in": …}: where its state (oauth-state.json) is kept (default: the config file's folder)`,
  sidecar: `Usage: switchyard sidecar --config-dir DIR [--worker URL] [--entity-id ID]
       switchyard sidecar init --config-dir DIR --worker URL --entity-id ID [--force]
       switchyard sidecar profiles --config-dir DIR

Links this workstation to its worker and hosts the MCP servers configured in DIR. The host
proves its identity with its private key (DIR/host.key, written by sidecar init).
Flags override the values in DIR/sidecar.json.

Options:
  --config-dir DIR  Sidecar config dir (sidecar.json, host.key, mcp-servers/, trust-profiles/, …)
  --worker URL      Worker base URL: https:, or http: on this machine only
  --entity-id ID    This host's entity id`,
  init: `Usage: switchyard sidecar init --config-dir DIR --worker URL --entity-id ID [--force]

Sets up a workstation: writes DIR/sidecar.json, creates the host's Ed25519 private key
DIR/host.key (mode 0600) and prints the "hosts" entry to add to the worker config:
{"entity-id": ID, "public-key": "ed25519:…"}. Running it again prints the entry again; an
existing key is never overwritten (delete it to make a new identity).

Options:
  --config-dir DIR  Sidecar config dir to create or update
  --worker URL      Worker base URL: https:, or http: only for 127.0.0.1, localhost or [::1]
  --entity-id ID    This host's entity id, as the worker config will list it
  --force           Rewrite the worker and entity id of an existing sidecar.json (other keys kept)`,
  'host-entry': `Usage: switchyard sidecar host-entry --config-dir DIR

Prints this host's line: the one command to run on the worker's machine, switchyard host add
with this host's entity id, public key, the servers its mcp.json layers define and the current
revision of each trust profile. Run it again after changing servers or profiles, and add the new
line again: host add shows every pin it moves. Exit 1 when a profile does not resolve (left out).`,
  host: `Usage: switchyard host add --config FILE 'LINE' [--dry-run] [--rekey]

Adds a workstation to a worker config from the one line its sidecar init or sidecar host-entry
printed: its "hosts" entry (public key and the trust profile revisions it reported), each of its
servers the config does not define yet (bound to it), and the pins of agents using its servers,
moved to the revisions it reports. Every change is printed; --dry-run writes nothing. A line
that gives a known host another key is refused unless --rekey says the host made a new one (the
old key can then no longer link). The file is created when missing, validated as the worker
validates it, and written atomically.`,
  agent: `Usage: switchyard agent add NAME --servers a,b [--trust-profile REF [--trust-profile-revision sha256:…]]
                            [--containment required] [--url URL] --config FILE
       switchyard agent set NAME [--servers a,b] [--trust-profile REF [--trust-profile-revision sha256:…]]
                            [--containment required|none] [--dry-run] --config FILE
       switchyard agent pin NAME [--dry-run] --config FILE
       switchyard agent remove NAME --config FILE
       (add, set and pin take --config-dir DIR: see below)

add makes a fresh bearer token, writes its sha-256 into the worker config and prints the token
once with client configs (Claude Code, VS Code, Cursor, Claude Desktop, any SDK client); the
token is stored nowhere. --trust-profile REF pins the revision the hosts of those servers
reported (switchyard host add recorded it); --trust-profile-revision sha256:… gives it instead.
--url is the worker's address for the client configs (default: "public-url", else
http://127.0.0.1:8787). pin moves the agent's pin to the revision its hosts reported, printing the
old and new one (host add already does this for the agents of the host it adds). set changes an
agent's servers, trust profile or containment and keeps its token (a profile is pinned at what
the hosts of its servers report); every change is printed. remove takes the agent out, which
revokes its token. A server bound to a top-level {"type":"local"} (worker --runtime node) has no
host to report: its profile's revision is read from DIR/trust-profiles, DIR being --config-dir
as the worker takes it (default: the config file's folder).`,
  'admin-token': `Usage: switchyard admin-token --config FILE

Makes a fresh admin token, writes its sha-256 into the worker config as "admin-token-sha256" and
prints the token once; it is stored nowhere. The admin token sees every host, server, session and
call on /healthz and the status page (/), and on the OAuth consent page approves an app for any
agent. Run again, it replaces the token: the old one no longer works, nor do the OAuth grants it
approved.`,
  profiles: `Usage: switchyard sidecar profiles --config-dir DIR

Prints each trust profile in DIR/trust-profiles with its current revision, the value to put in
the worker config's "trust-profile-revision".`,
  check: `Usage: switchyard check [--runtime edge|node|cloudflare] [--worker URL] [--entity-id ID] FILE|DIR...
       switchyard check [--runtime edge|node|cloudflare] worker.json DIR

Validates a worker config, a sidecar.json, an mcp.json or a trust profile (recognised by its
content and place) and prints every problem as "path: message". Exit 1 when there is any.
A sidecar config dir is checked whole: every file in it, and every trust profile its files name
must exist in trust-profiles/ and resolve with its bases. A worker config given with a host's dir
(check worker.json DIR) is checked against it: the host and its key under "hosts", the servers
bound to it defined in its mcp.json, and its agents' trust profiles at their current revision.
With --runtime node and no DIR, a worker config with local servers is checked with its own
folder, where switchyard worker --runtime node reads them without --config-dir.

Options:
  --runtime R       How a worker config will run: edge (default: dist/worker.js, switchyard worker
                    under Deno), node (switchyard worker --runtime node, which also serves
                    top-level {"type":"local"} servers) or cloudflare (dist/cloudflare/worker.js:
                    what Workers refuse too, such as audit.file, and the 5,120 bytes a secret
                    holds, counted on the config as minified JSON)
  --worker URL, --entity-id ID
                    A config dir as switchyard sidecar reads it with these flags, which win over
                    its sidecar.json's "worker" and "entity-id"`,
  doctor: `Usage: switchyard doctor [--config-dir DIR [--launch]] [--worker URL]

Checks that bubblewrap is present and usable, user namespaces are enabled, Deno is installed and
(with --worker) that the worker answers. Exit 1 when a check fails.

With --config-dir DIR it checks a workstation (no Deno needed): DIR/sidecar.json, the host key,
the real link handshake with the worker (as a probe: verified, then closed; a sidecar running
on this host keeps its link), every trust profile, and every
configured server's command, each failure with what to do. --worker URL beside it is the
worker probed instead of sidecar.json's "worker", as switchyard sidecar --worker dials it.

--launch (with --config-dir) also starts each server as the sidecar would, one at a time: the
same command, containment, environment and process handling, under each trust profile it runs
under (its floor alone, and each profile the worker's agents pin here; without the worker's word,
its floor alone), and sends it initialize and tools/list. A failure says why (launch-failed,
containment-unavailable, server-exited), with the server's last stderr lines and, when they name
a path the profile does not grant, the grant to add. Each server gets 15 s, all of them 120 s;
every process started is ended before doctor exits, Ctrl-C included.`,
};

/** Prints one command's help; exit code 0. */
export function printHelp(name: string): number {
  process.stdout.write(HELP[name] + '\n');
  return 0;
}
