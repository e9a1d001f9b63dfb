/**
 * The SDK's `MessageExtraInfo` of an agent's messages, made lazily from the HTTP request they
 * came in: nothing is copied unless a reader asks for it. The passthrough reads one header,
 * `traceparent`, and only from the request itself (`requestHeaderOf`).
 *
 * @module
 */
import type { MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

/** The request an `extraFor` came from, for `requestHeaderOf`. */
const REQUEST = Symbol('request');

/**
 * Classes, not object literals with getters: V8 makes a literal's getter pair in the old
 * generation, one per literal, and that pair, dead with its request, still held the getter's
 * closure and so the request through every young-generation GC until the next full one (issue 17;
 * found on the sidecar's modern path, whose objects it kept alive the same way).
 */
class RequestExtra implements MessageExtraInfo {
  readonly [REQUEST]: Request;
  #info: RequestInfo | undefined;

  constructor(request: Request) {
    this[REQUEST] = request;
  }

  get requestInfo(): RequestInfo {
    return (this.#info ??= new RequestInfo(this[REQUEST]));
  }
}

class RequestInfo {
  readonly headers: Record<string, string | undefined>;
  readonly #request: Request;
  #url: URL | undefined;

  constructor(request: Request) {
    this.#request = request;
    this.headers = headersRecord(request.headers);
  }

  get url(): URL {
    return (this.#url ??= new URL(this.#request.url));
  }
}

/** The `MessageExtraInfo` of a request's messages, built only if someone reads it. */
export function extraFor(request: Request): MessageExtraInfo {
  return new RequestExtra(request);
}

/**
 * One header of the request an `extraFor` came from (null when absent or for any other extra):
 * the passthrough reads `traceparent` of every message, and going through `requestInfo` built an
 * object and a Proxy per request for that one lookup (issue 17).
 */
export function requestHeaderOf(extra: MessageExtraInfo | undefined, name: string): string | null {
  return (extra as { [REQUEST]?: Request } | undefined)?.[REQUEST]?.headers.get(name) ?? null;
}

/**
 * The request's headers as the record `MessageExtraInfo` has, read through: one header looked
 * up (by an SDK reader of `requestInfo`) is one `Headers.get`, where a copy
 * iterated every header (in Deno through WebIDL iterators, tens of µs a call: issue 17). Listing
 * the keys copies them once.
 */
function headersRecord(headers: Headers): Record<string, string | undefined> {
  let copy: Record<string, string> | undefined;
  const all = () => (copy ??= Object.fromEntries(headers.entries()));
  const lookup = (key: string | symbol): string | undefined => {
    if (typeof key !== 'string') return undefined;
    try {
      return headers.get(key) ?? undefined;
    } catch {
      return undefined; // not a header name at all
    }
  };
  return new Proxy({} as Record<string, string | undefined>, {
    get: (_, key) => lookup(key),
    has: (_, key) => lookup(key) !== undefined,
    ownKeys: () => Reflect.ownKeys(all()),
    getOwnPropertyDescriptor: (_, key) => {
      const value = typeof key === 'string' ? all()[key] : undefined;
      return value === undefined ? undefined : { value, writable: false, enumerable: true, configurable: true };
    },
  });
}
