/**
 * Host and Origin validation: the worker's DNS-rebinding protection.
 *
 * A web page on a hostile site can resolve its own name to 127.0.0.1 and then talk to a worker
 * on this machine from the victim's browser. Two checks stop that:
 *
 * - **Host**: the `Host` header must name this worker (`allowed-hosts`). A rebinding page sends its
 *   own name. A foreign Host gets **403** (not 421: 421 invites a client to retry elsewhere, and
 *   the MCP SDK's own DNS-rebinding check answers 403 too).
 * - **Origin**: a browser always sends `Origin` on cross-origin fetches; when present it must be
 *   allowed (`allowed-origins`), else **403**. Non-browser MCP clients send none and pass.
 *
 * A page the Origin check lets through is a browser client (the MCP Inspector on localhost, a web
 * app at an origin in `allowed-origins`): it gets CORS, a preflight answered before any
 * authentication (a preflight carries no credentials) and the headers an MCP client reads
 * exposed, else its browser would hide every answer from it. The discovery documents under
 * `/.well-known/` are public, so any origin may read them, as their `Access-Control-Allow-Origin:
 * *` already says; nothing else a foreign origin sends passes.
 *
 * Both bodies are `{"error":{"reason":"invalid-request","message":…}}`, like every other HTTP
 * error of the worker. The checks run on every route except `/link`, which sidecars (not
 * browsers) dial, possibly through a tunnel that rewrites Host; it has its own authentication.
 *
 * Patterns: an allowed host is `name` (any port) or `name:port` (that port only); IPv6 literals
 * are bracketed, `[::1]`. An allowed origin is a full origin `http://name:port`, an origin without
 * port (any port), or a bare `name` (any scheme, any port). Matching is case-insensitive. The
 * guard parses its allow-lists once, when the app is built; a request only parses its own headers.
 *
 * @module
 */
import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { WireError } from '../../shared/errors.ts';

/** Loopback names, any port: what a worker on 127.0.0.1 accepts by default. */
export const DEFAULT_ALLOWED_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];
export const DEFAULT_ALLOWED_ORIGINS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

const NAME = String.raw`(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)`;
/** `name` or `name:port`. */
export const HOST_PATTERN = new RegExp(`^${NAME}(:\\d{1,5})?$`);
/** `name`, `scheme://name` or `scheme://name:port`. */
export const ORIGIN_PATTERN = new RegExp(`^(?:(https?)://)?${NAME}(:\\d{1,5})?$`);

interface Parsed {
  scheme?: string;
  name: string;
  port?: string;
}

function parseHost(value: string): Parsed | null {
  const m = HOST_PATTERN.exec(value.trim());
  if (m === null) return null;
  return { name: m[1]!.toLowerCase(), ...(m[2] !== undefined ? { port: m[2].slice(1) } : {}) };
}

function parseOrigin(value: string): Parsed | null {
  const m = ORIGIN_PATTERN.exec(value.trim());
  if (m === null) return null;
  return {
    ...(m[1] !== undefined ? { scheme: m[1].toLowerCase() } : {}),
    name: m[2]!.toLowerCase(),
    ...(m[3] !== undefined ? { port: m[3].slice(1) } : {}),
  };
}

function matches(pattern: Parsed, actual: Parsed): boolean {
  if (pattern.name !== actual.name) return false;
  if (pattern.scheme !== undefined && pattern.scheme !== actual.scheme) return false;
  return pattern.port === undefined || pattern.port === actual.port;
}

/** Parses allow-list entries once; malformed ones (the config schema rejects them) match nothing. */
function parseAll(entries: readonly string[], parse: (value: string) => Parsed | null): Parsed[] {
  return entries.flatMap((entry) => parse(entry) ?? []);
}

function hostIn(host: string | null | undefined, patterns: readonly Parsed[]): boolean {
  if (host === null || host === undefined) return false;
  const actual = parseHost(host);
  return actual !== null && patterns.some((pattern) => matches(pattern, actual));
}

function originIn(origin: string | null | undefined, patterns: readonly Parsed[]): boolean {
  if (origin === null || origin === undefined) return true;
  const actual = parseOrigin(origin);
  if (actual === null || actual.scheme === undefined) return false;
  return patterns.some((pattern) => matches(pattern, actual));
}

/** True when the `Host` header value is allowed; a missing or malformed header never is. */
export function isHostAllowed(host: string | null | undefined, allowed: readonly string[]): boolean {
  return hostIn(host, parseAll(allowed, parseHost));
}

/** True when the `Origin` header is absent (non-browser client) or allowed; `null` never is. */
export function isOriginAllowed(origin: string | null | undefined, allowed: readonly string[]): boolean {
  return originIn(origin, parseAll(allowed, parseOrigin));
}

export interface HostOriginOptions {
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
}

/**
 * What a browser client may send and read: the methods of the Streamable HTTP transport; any
 * request header it asks for (2026-07-28's `Mcp-Param-*` are named by the tool called); the
 * answer headers a client needs (the session, the protocol version, the 401's challenge, a 429's
 * wait).
 */
const browserClients = cors({
  origin: (origin) => origin,
  allowMethods: ['GET', 'POST', 'DELETE'],
  exposeHeaders: ['Mcp-Session-Id', 'Mcp-Protocol-Version', 'WWW-Authenticate', 'Retry-After'],
  maxAge: 600,
});

/** Public documents any page may read (RFC 8414 and RFC 9728 discovery). */
const isPublic = (path: string) => path.startsWith('/.well-known/');

/** Middleware rejecting a foreign Host or Origin with 403 before any other work; CORS for an Origin it allows. */
export function hostOriginGuard(options: HostOriginOptions): MiddlewareHandler {
  const hosts = parseAll(options.allowedHosts, parseHost);
  const origins = parseAll(options.allowedOrigins, parseOrigin);
  // Every request of a deployment carries the same Host: the last one allowed is not parsed again.
  let lastAllowedHost: string | undefined;
  return async function hostOriginGuard(c, next) {
    const host = c.req.header('host') ?? hostFromUrl(c.req.url);
    if ((host === undefined || host !== lastAllowedHost) && !hostIn(host, hosts)) {
      const error = new WireError('invalid-request', `Host ${quote(host)} is not allowed: add it to "allowed-hosts" in the worker config`);
      return c.json(error.toHttpBody(), 403);
    }
    lastAllowedHost = host;
    const origin = c.req.header('origin');
    // Non-browser clients send no Origin: nothing more to do for them.
    if (origin === undefined) return next();
    if (!originIn(origin, origins) && !isPublic(c.req.path)) {
      // A foreign page is what this stops (a forged consent form, a site calling an agent endpoint): the fix is for an origin the operator owns.
      const error = new WireError('invalid-request', `Origin ${quote(origin)} is not allowed: a page on another site may not call this worker; if it is this worker's own address or a page you trust, add it to "allowed-origins" in the worker config`);
      return c.json(error.toHttpBody(), 403);
    }
    // Its answer names the origin it is for, and says `Vary: Origin`, so a cache hands it to no other.
    return browserClients(c, next);
  };
}

/** `app.request()` in tests and some runtimes omit the header; the URL then carries the host. */
function hostFromUrl(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

function quote(value: string | null | undefined): string {
  return value === null || value === undefined ? '(none)' : `"${value.slice(0, 200)}"`;
}
