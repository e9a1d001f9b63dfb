/**
 * What a failed request to a server may tell an agent: its error's message with every URL in it
 * replaced by `<url>` and any bearer token cut, bounded. Runtimes quote the request's URL in their
 * fetch errors (Deno: `error sending request for url (…)`; Node: a URL it refuses, credentials and
 * all), and a server's URL is the worker's config: its query may hold a key, and its host and path
 * are nothing an agent was told. The reason the request failed (refused, reset, a TLS problem) is
 * what helps, and it stays.
 *
 * @module
 */

const MAX_LENGTH = 300;

/** `error`'s message (and its cause's code, as Node keeps the reason there) without URLs or tokens. */
export function fetchErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof Error && typeof (error.cause as { code?: unknown } | undefined)?.code === 'string' ? (error.cause as { code: string }).code : undefined;
  const text = (code !== undefined && !message.includes(code) ? `${message} (${code})` : message)
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s)"'<>]*/gi, '<url>')
    .replace(/\bBearer\s+[^\s"']+/gi, 'Bearer [redacted]');
  return text.length > MAX_LENGTH ? `${text.slice(0, MAX_LENGTH - 1)}…` : text;
}

/**
 * `text` with every configured header value cut out: as written, JSON-escaped (an error quoting a
 * request body) and trimmed, and each long word of one (the token after its scheme). A server that
 * answers an error quoting the key it was sent ("invalid key sk-…"), or fetch quoting a value it
 * refuses, must not pass it on to agents, the status page or a log. Longest first, so a whole
 * value goes before its words.
 */
export function withoutHeaderValues(text: string, headers: Record<string, string> | undefined): string {
  const secrets = Object.values(headers ?? {})
    .flatMap((value) => [
      ...[value, JSON.stringify(value).slice(1, -1), value.trim()].filter((form) => form.length >= 4),
      ...value.split(/\s+/).filter((word) => word.length >= 8),
    ])
    .sort((a, b) => b.length - a.length);
  return secrets.reduce((out, secret) => out.replaceAll(secret, '[redacted]'), text);
}
