/**
 * The consent flow's CSRF cookie, `sy_oauth_csrf`: set on the sign-in page (HttpOnly,
 * SameSite=Strict, path /oauth, as long as a consent lives) and read back from each form POST.
 * On a worker whose base URL is https (its own, or `public-url` in front of it) it is
 * `__Secure-sy_oauth_csrf` and `Secure`: a browser keeps a cookie of that name only when an https
 * page set it Secure, so a plain-http page or a network attacker cannot plant one that the form
 * would then be checked against. A sibling https site of a shared parent domain still can (only
 * `__Host-`, which would need Path=/, stops that): the POST's same-origin check and the sealed
 * form, which only the person's own page received, are what hold there.
 *
 * Read as hono's `getCookie` reads one cookie (RFC 6265 §5.2 pairs; the first of that name with a
 * valid value wins; spaces and tabs trimmed, one pair of quotes removed, percent-decoded), without
 * the rest of hono's cookie helper (issue 17).
 *
 * @module
 */
import type { Context } from 'hono';

export const CSRF_COOKIE = 'sy_oauth_csrf';

/** The characters a cookie value may hold (RFC 6265 §4.1.1 cookie-octet, plus space as browsers send it). */
const COOKIE_VALUE = /^[ !#-:<-[\]-~]*$/;

/**
 * Whether the worker at `base` (its base URL: `public-url`, else the request's origin) is served
 * over https. The base, not the request: behind a proxy that ends TLS the request is plain http.
 */
const isHttps = (base: string) => new URL(base).protocol === 'https:';

/** The cookie's name on the worker at `base`: prefixed over https, as it is set there. */
export function csrfCookieName(base: string): string {
  return isHttps(base) ? `__Secure-${CSRF_COOKIE}` : CSRF_COOKIE;
}

/** The `Set-Cookie` value that keeps `value` for `maxAgeSeconds`; `Secure` (and prefixed) when the worker at `base` is https. */
export function csrfSetCookie(base: string, value: string, maxAgeSeconds: number): string {
  const secure = isHttps(base) ? '; Secure' : '';
  return `${csrfCookieName(base)}=${value}; Path=/oauth; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/** The request's CSRF cookie on the worker at `base` (only the name it is set under there), or undefined when it sent none. */
export function csrfCookieOf(c: Context, base: string): string | undefined {
  const name = csrfCookieName(base);
  for (const pair of (c.req.header('cookie') ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1 || pair.slice(0, eq).replace(/^[ \t]+|[ \t]+$/g, '') !== name) continue;
    let value = pair.slice(eq + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!COOKIE_VALUE.test(value)) continue;
    try {
      return decodeURIComponent(value);
    } catch {
      // A malformed escape, kept as sent (hono decodes what it can of it): either way it holds a `%`, as no CSRF value does.
      return value;
    }
  }
  return undefined;
}
