/**
 * URLs as logs and error messages may show them: a configured URL can carry a credential in its
 * userinfo (`https://user:key@host`), its query (`?api_key=`) or its fragment (OAuth's implicit
 * flow puts tokens there), and a message that quotes the URL leaks it to whoever reads the log or
 * receives the error. The host, port and path stay, so the reader still knows which endpoint it was.
 *
 * @module
 */

const REDACTED = '[redacted]';
/** Anything from a scheme's `://` to the next whitespace or quote. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;
/** Punctuation a message puts after a URL it quotes: `(url):`, `url.` */
const TRAILING_PUNCTUATION = /[)\]}>,.;:!]+$/;

/**
 * `url` with its userinfo, query and fragment replaced by `[redacted]`. A text `new URL` cannot
 * parse loses its userinfo up to the last `@` before the path, since a password may hold an `@`
 * (or a `#`) of its own, and keeps nothing after its first `?` or `#`.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redactUnparsed(url);
  }
  const userinfo = parsed.username !== '' || parsed.password !== '';
  // An opaque URL (`mailto:`) has no authority to rebuild: its path is all there is.
  const authority = parsed.host !== '' || url.slice(parsed.protocol.length).startsWith('//') ? `//${userinfo ? `${REDACTED}@` : ''}${parsed.host}` : '';
  return `${parsed.protocol}${authority}${parsed.pathname}${parsed.search !== '' ? `?${REDACTED}` : ''}${parsed.hash !== '' ? `#${REDACTED}` : ''}`;
}

/** Every `scheme://…` URL in `text` passed through `redactUrl`; the rest of the text is kept. */
export function redactUrlsIn(text: string): string {
  return text.replace(URL_IN_TEXT, (found) => {
    const trailing = TRAILING_PUNCTUATION.exec(found)?.[0] ?? '';
    return redactUrl(found.slice(0, found.length - trailing.length)) + trailing;
  });
}

function redactUnparsed(text: string): string {
  // Userinfo first, over the whole text: an unencoded `#` or `?` in a password must not end it early.
  const unnamed = text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/]*@/i, `$1${REDACTED}@`);
  const cut = unnamed.search(/[?#]/);
  if (cut < 0) return unnamed;
  const fragmentAfter = unnamed[cut] === '?' && unnamed.indexOf('#', cut) >= 0;
  return `${unnamed.slice(0, cut)}${unnamed[cut]}${REDACTED}${fragmentAfter ? `#${REDACTED}` : ''}`;
}
