import { getCookie } from 'hono/cookie';
import { describe, expect, it } from 'vitest';
import { Hono } from '../../../trie-router-hono.ts';
import { CSRF_COOKIE, csrfCookieOf, csrfSetCookie } from './csrf-cookie.ts';

const LOOPBACK = 'http://127.0.0.1:8787';
const TOKEN = 'a'.repeat(20) + '-_' + 'Z9'.repeat(10) + 'b';
const HEADERS: Array<string | undefined> = [
  undefined,
  '',
  `${CSRF_COOKIE}=${TOKEN}`,
  `other=1; ${CSRF_COOKIE}=${TOKEN}; last=2`,
  ` \t${CSRF_COOKIE} \t= \t${TOKEN} \t`,
  `${CSRF_COOKIE}="${TOKEN}"`,
  `${CSRF_COOKIE}="`,
  `${CSRF_COOKIE}=`,
  `${CSRF_COOKIE}`,
  `x${CSRF_COOKIE}=${TOKEN}`,
  `${CSRF_COOKIE}x=${TOKEN}`,
  `${CSRF_COOKIE}=%41%62c`,
  `${CSRF_COOKIE}=%ZZ%41`,
  `${CSRF_COOKIE}=%C3%41`,
  `${CSRF_COOKIE}=a,b; ${CSRF_COOKIE}=${TOKEN}`,
  `${CSRF_COOKIE}=a\\b; ${CSRF_COOKIE}=second`,
  `${CSRF_COOKIE}=first; ${CSRF_COOKIE}=second`,
  `${CSRF_COOKIE}=é; ${CSRF_COOKIE}=ascii`,
  `${CSRF_COOKIE}=a=b`,
  `;;${CSRF_COOKIE}=x;;`,
];

describe('the CSRF cookie', () => {
  it('reads the cookie as hono\'s getCookie does, header by header', async () => {
    const app = new Hono();
    app.get('/', (c) => c.json({ ours: csrfCookieOf(c, LOOPBACK) ?? null, hono: getCookie(c, CSRF_COOKIE) ?? null }));
    for (const cookie of HEADERS) {
      const response = await app.request('/', { headers: cookie === undefined ? {} : { cookie } });
      const { ours, hono } = (await response.json()) as { ours: string | null; hono: string | null };
      if (hono !== null && hono.includes('%')) expect(ours, String(cookie)).toContain('%');
      else expect(ours, String(cookie)).toBe(hono);
    }
  });

  it('is __Secure- and Secure on an https worker and plain on an http one, and is read back under the name it was set by', async () => {
    expect(csrfSetCookie(LOOPBACK, TOKEN, 600)).toBe(`sy_oauth_csrf=${TOKEN}; Path=/oauth; HttpOnly; SameSite=Strict; Max-Age=600`);
    expect(csrfSetCookie('https://yard.example.com', TOKEN, 600)).toBe(`__Secure-sy_oauth_csrf=${TOKEN}; Path=/oauth; HttpOnly; SameSite=Strict; Max-Age=600; Secure`);
    const app = new Hono();
    app.get('/', (c) => c.json({ http: csrfCookieOf(c, LOOPBACK) ?? null, https: csrfCookieOf(c, 'https://yard.example.com') ?? null }));
    const read = async (cookie: string) => (await app.request('/', { headers: { cookie } })).json();
    expect(await read(`sy_oauth_csrf=planted; __Secure-sy_oauth_csrf=${TOKEN}`)).toEqual({ http: 'planted', https: TOKEN });
    expect(await read('sy_oauth_csrf=planted')).toEqual({ http: 'planted', https: null });
  });
});
