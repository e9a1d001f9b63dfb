/**
 * The consent flow's CSRF cookie, `sy_oauth_csrf`: set on the sign-in page (HttpOnly,
 * SameSite=Strict, path /oauth, as long as a consent lives) and read back from each form POST.
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

/** The `Set-Cookie` value that keeps `value` for `maxAgeSeconds`; `Secure` when the page came over https. */
export function csrfSetCookie(c: Context, value: string, maxAgeSeconds: number): string {
  const secure = new URL(c.req.url).protocol === 'https:' ? '; Secure' : '';
  return `${CSRF_COOKIE}=${value}; Path=/oauth; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/** The request's CSRF cookie, or undefined when it sent none. */
export function csrfCookieOf(c: Context): string | undefined {
  for (const pair of (c.req.header('cookie') ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1 || pair.slice(0, eq).replace(/^[ \t]+|[ \t]+$/g, '') !== CSRF_COOKIE) continue;
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
