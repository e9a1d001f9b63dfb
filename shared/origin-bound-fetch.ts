/**
 * A fetch of an upstream MCP server's URL that follows redirects only within its origin (plus an
 * http → https upgrade of the same host): the configured headers (an API key) go with every
 * request, and a redirect elsewhere would hand them to another server. Runtimes strip only
 * `Authorization` on a cross-origin redirect, and follow one to any address, private ones too.
 * Shared by both HTTP clients (`legacy-http-client-transport.ts`, `modern-http-transport.ts`).
 *
 * @module
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

const MAX_REDIRECTS = 5;

/** `fetchFn(url, init)` with redirects followed by hand, within `url`'s origin only. */
export async function fetchWithinOrigin(fetchFn: FetchLike, url: URL, init: RequestInit): Promise<Response> {
  const method = init.method ?? 'GET';
  let at = url;
  for (let hops = 0; ; hops++) {
    const response = await fetchFn(at, { ...init, redirect: 'manual' });
    const next = redirectWithinOrigin(response, at, method);
    if (next === undefined) return response;
    await response.body?.cancel();
    if (hops >= MAX_REDIRECTS) throw new Error(`The HTTP server redirected more than ${MAX_REDIRECTS} times within its origin`);
    at = next;
  }
}

/** Where `response` redirects to, when that is within `from`'s origin and keeps the method. */
function redirectWithinOrigin(response: Response, from: URL, method: string): URL | undefined {
  const keepsMethod = response.status === 307 || response.status === 308 || (method === 'GET' && [301, 302, 303].includes(response.status));
  const location = keepsMethod ? response.headers.get('location') : null;
  if (location === null) return undefined;
  let to: URL;
  try {
    to = new URL(location, from);
  } catch {
    return undefined;
  }
  const sameOrigin = to.protocol === from.protocol && to.host === from.host;
  const upgraded = from.protocol === 'http:' && to.protocol === 'https:' && to.hostname === from.hostname && from.port === '' && to.port === '';
  const addsUserinfo = (to.username !== '' || to.password !== '') && (to.username !== from.username || to.password !== from.password);
  return (sameOrigin || upgraded) && !addsUserinfo ? to : undefined;
}

/** What to say of a redirect that was not followed (empty for any other answer). */
export function redirectNote(response: Response): string {
  if (response.type === 'opaqueredirect') return ' (a redirect, not followed: this runtime does not show where to)';
  const location = response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
  return location === null ? '' : ' (a redirect out of the server\'s origin, not followed)';
}

/** The `type/subtype` of a Content-Type header, lowercased, without parameters. */
export function mediaType(header: string | null): string | undefined {
  const essence = header?.split(';', 1)[0]?.trim().toLowerCase();
  return essence === '' ? undefined : essence;
}
