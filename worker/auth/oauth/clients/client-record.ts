/**
 * A client as the authorization server knows it, whichever way it registered: from Dynamic
 * Client Registration (kept in the store) or from its Client ID Metadata Document (fetched and
 * cached). Plus the redirect URI rules both share.
 *
 * @module
 */
import * as z from '../../../../shared/zod.ts';

export type TokenEndpointAuthMethod = 'none' | 'client_secret_post' | 'client_secret_basic';

export interface OAuthClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  authMethod: TokenEndpointAuthMethod;
  /** sha-256 hex of the client secret, for confidential DCR clients only. */
  secretSha256?: string;
  source: 'registration' | 'metadata-document';
  /**
   * False when the client registered its grant types without `refresh_token` (RFC 7591 §2): its
   * grants then issue no refresh token. Absent: it may refresh (it named no grant types, or it
   * registered before they were recorded).
   */
  refreshGrant?: false;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/**
 * Schemes a redirect may never use: they run code or read local data in the browser, or are the
 * browser's or the system's own (a page's source, an archive's entry, a mail, call or message to
 * start), not a native app's private-use scheme that receives the code (RFC 8252 §7.1).
 */
const FORBIDDEN_SCHEMES = new Set([
  'javascript:', 'x-javascript:', 'livescript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:', 'ws:', 'wss:', 'ftp:',
  'view-source:', 'jar:', 'chrome:', 'resource:', 'intent:', 'mailto:', 'tel:', 'sms:',
]);

/**
 * Why a redirect URI may not be registered, or null when it may: absolute, no fragment, and
 * https, http on loopback only (native apps, RFC 8252 §7.3), or a private-use scheme of a native
 * app (`cursor://…`, RFC 8252 §7.1).
 */
export function redirectUriRefusal(uri: string): string | null {
  if (!URL.canParse(uri)) return `"${uri}" is not an absolute URI`;
  const url = new URL(uri);
  if (url.hash !== '' || uri.includes('#')) return `"${uri}" has a fragment`;
  if (url.username !== '' || url.password !== '') return `"${uri}" carries credentials`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? null : `"${uri}" is http: on a host other than loopback: use https`;
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `"${uri}" uses the scheme ${url.protocol} which may not receive a code`;
  return null;
}

/**
 * Whether a requested redirect URI is one the client registered: the exact string (OAuth 2.1
 * §2.3.1), except that an http loopback one may name any port (RFC 8252 §7.3: a native app
 * listens on a port it gets from the system at each sign-in), all else equal.
 */
export function redirectUriMatches(registered: string, requested: string): boolean {
  if (registered === requested) return true;
  if (!URL.canParse(registered) || !URL.canParse(requested)) return false;
  const a = new URL(registered);
  const b = new URL(requested);
  if (a.protocol !== 'http:' || b.protocol !== 'http:' || !LOOPBACK_HOSTS.has(a.hostname)) return false;
  // Compared as written but for the port: no case folding, no path normalisation.
  const withoutPort = (uri: string, url: URL) => uri.replace(`//${url.host}`, `//${url.hostname}`);
  return !requested.includes('#') && withoutPort(registered, a) === withoutPort(requested, b) && a.hostname === b.hostname;
}

/** True when every redirect URI is on this machine's loopback: the consent page warns about those. */
export function loopbackOnly(uris: readonly string[]): boolean {
  return uris.every((u) => URL.canParse(u) && LOOPBACK_HOSTS.has(new URL(u).hostname));
}

export const redirectUrisSchema = z.lazily(() =>
  z.array(z.string().check(z.maxLength(2000))).check(
    z.minLength(1, 'must list at least one redirect URI'),
    z.maxLength(20, 'at most 20 redirect URIs'),
    z.superRefine((uris: string[], ctx) => {
      uris.forEach((uri, i) => {
        const why = redirectUriRefusal(uri);
        if (why !== null) ctx.addIssue({ code: 'custom', path: [i], message: why });
      });
    }),
  ),
);
