/**
 * The `wrangler.jsonc` written beside the Workers bundle (dist/cloudflare/): paste-ready for
 * `wrangler deploy`. The Durable Object classes are SQLite-backed (`new_sqlite_classes`, what the
 * Free plan requires); HostLink and AgentSession store nothing (their state is live sockets and
 * sessions in memory), OAuthState keeps the built-in OAuth server's records, AgentSlots each
 * agent's session leases (added by migration v2: a migration is never rewritten once deployed). The config is a secret, never a var in this file: `wrangler secret put
 * SWITCHYARD_WORKER_CONFIG < worker.json`.
 *
 * The compatibility date is the newest the workerd pinned by wrangler 4.86.0 (1.20260426.1) knows,
 * so `wrangler dev` and the tests run what is deployed.
 */
export const COMPATIBILITY_DATE = '2026-04-26';

/**
 * `enable_request_signal`: an agent that goes away aborts its request's `signal`, which is how an
 * open stream (a listen, a request's SSE answer) learns to close its channels; without it the
 * runtime tells no one, and each abandoned listen keeps its host's subscription open.
 */
export const COMPATIBILITY_FLAGS = ['enable_request_signal'];

export function wranglerTemplate({ name = 'switchyard' } = {}) {
  return `// Switchyard on Cloudflare Workers: \`wrangler deploy\` from this directory.
// Before the first deploy, send worker.json minified (a secret holds 5 KB) as the config secret:
//   node -e 'process.stdout.write(JSON.stringify(JSON.parse(require("fs").readFileSync(0, "utf8"))))' < worker.json | npx wrangler secret put SWITCHYARD_WORKER_CONFIG
// Set its "public-url" to this worker's URL (https://<name>.<subdomain>.workers.dev, or your custom
// domain): that alone lets sidecars and agents use it; "allowed-hosts" is for any other name.
{
  "name": ${JSON.stringify(name)},
  "main": "worker.js",
  // worker.js is already one minified file that imports nothing: bundled again, it grew by a third.
  "no_bundle": true,
  "compatibility_date": "${COMPATIBILITY_DATE}",
  // An agent that goes away aborts its request's signal: its open streams close their channels.
  "compatibility_flags": ${JSON.stringify(COMPATIBILITY_FLAGS)},
  "durable_objects": {
    "bindings": [
      // One per host, idFromName(entity id): holds that host's link (WebSocket Hibernation API).
      { "name": "HOST_LINK", "class_name": "HostLink" },
      // One per legacy agent session (initialize → newUniqueId; the session id names it).
      { "name": "AGENT_SESSION", "class_name": "AgentSession" },
      // One: the built-in OAuth server's clients, grants and token hashes (its storage).
      { "name": "OAUTH_STATE", "class_name": "OAuthState" },
      // One per agent, idFromName(agent name): its sessions' slots, so max-sessions holds on every isolate.
      { "name": "AGENT_SLOTS", "class_name": "AgentSlots" }
    ]
  },
  // Append only: a deployed worker has applied the earlier tags.
  "migrations": [
    { "tag": "v1", "new_sqlite_classes": ["HostLink", "AgentSession", "OAuthState"] },
    { "tag": "v2", "new_sqlite_classes": ["AgentSlots"] }
  ],
  "vars": {
    "SWITCHYARD_LOG_LEVEL": "info"
  },
  "observability": { "enabled": true }
}
`;
}
