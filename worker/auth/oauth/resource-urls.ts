/**
 * The worker as an OAuth protected resource (RFC 9728, RFC 8707): its base URL, the resource URL
 * of each agent endpoint, and where each one's metadata lives.
 *
 * The base is `public-url` when configured (a worker behind a proxy or tunnel), else the
 * request's own origin, which the Host guard has already checked. The issuer of the built-in
 * authorization server is that same base. Resources: the base itself (every endpoint), `/mcp`,
 * and `/servers/<name>/mcp`; a token is accepted on an endpoint when it was issued for the base
 * or for that exact endpoint, so a token for one server's endpoint does not open another's.
 *
 * @module
 */

export const PROTECTED_RESOURCE_WELL_KNOWN = '/.well-known/oauth-protected-resource';
export const AUTHORIZATION_SERVER_WELL_KNOWN = '/.well-known/oauth-authorization-server';

/** The worker's base URL (origin, no trailing slash) for a request. */
export function baseUrlOf(requestUrl: string, publicUrl: string | undefined): string {
  return new URL(publicUrl ?? requestUrl).origin;
}

/** A server's endpoint path, `/servers/<name>/mcp`, its name (as sent) captured. */
const SERVER_ENDPOINT = /^\/servers\/([^/]+)\/mcp$/;

/** True for the paths that are agent endpoints: `/mcp` and `/servers/<name>/mcp`. */
export function isAgentEndpointPath(path: string): boolean {
  return path === '/mcp' || SERVER_ENDPOINT.test(path);
}

/** The metadata URL of an endpoint (`path` = `/mcp`, …) or of the whole worker (`''`). */
export function resourceMetadataUrl(base: string, path: string): string {
  return `${base}${PROTECTED_RESOURCE_WELL_KNOWN}${path}`;
}

/** The resources a token may have been issued for to be accepted on the endpoint at `path`. */
export function acceptedResources(base: string, path: string): string[] {
  return [base, `${base}${path}`];
}

/**
 * The server a resource names (`<base>/servers/<name>/mcp`), or null for the base and `/mcp`,
 * which name none. `resource` is one {@link ownResource} returned.
 */
export function serverOfResource(resource: string, base: string): string | null {
  if (!resource.startsWith(base)) return null;
  const name = SERVER_ENDPOINT.exec(resource.slice(base.length))?.[1];
  if (name === undefined) return null;
  // As the route reads it: `/servers/my%20box/mcp` is server "my box".
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * The canonical form of a `resource` parameter (RFC 8707 §2: absolute, no fragment), lowercase
 * scheme and host, no trailing slash on an empty path; null when it is not one of this worker's
 * resources (another server, or a path that is no endpoint).
 */
export function ownResource(resource: string, base: string): string | null {
  if (!URL.canParse(resource) || resource.includes('#')) return null;
  const url = new URL(resource);
  if (url.origin !== base || url.search !== '' || url.username !== '' || url.password !== '') return null;
  const path = url.pathname === '/' ? '' : url.pathname;
  if (path !== '' && !isAgentEndpointPath(path)) return null;
  return `${base}${path}`;
}
