/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document-00): a client whose
 * `client_id` is an https URL is described by the JSON document at that URL. Fetching it is an
 * SSRF risk, so the fetch is fenced in (`address-policy.ts` for hosts; here the rest):
 *
 * - the URL: https, a path other than `/`, no fragment, credentials or dot segments;
 * - the host: a public name or address; on Node and Deno every address the name resolves to too,
 *   and the document is read over a connection to one of those very addresses
 *   (`connection-fetch.ts`), so a DNS answer that changes after the check (rebinding) is never used;
 * - the request: no redirects followed, 5 s at most, 5 KiB at most, JSON only;
 * - the document: `client_id` equal to the URL exactly, `client_name`, valid `redirect_uris`,
 *   public-client authentication (`none`);
 * - a cache honouring `Cache-Control: max-age` (clamped to 1 min … 1 day; 5 min without one),
 *   bounded in size, so one client does not make the worker fetch on every request.
 *
 * Strangers may name any https URL, so what they can make it fetch is bounded, without letting
 * them lock known clients out: documents fetched well and failures are cached apart (junk fills
 * only the failures' cache, and a failed URL is not fetched again for {@link FAILURE_TTL_MS}); a
 * cached document is served without a fetch, and fetching it again once its lifetime is over
 * costs nothing. Only a fetch of a URL not in the cache counts, per host of the URL, and only
 * when it fails: {@link FAILED_FETCHES_PER_HOST_PER_MINUTE} a minute. The cache keeps at most
 * {@link CACHE_ENTRIES_PER_HOST} documents per host, so documents served by a stranger's host
 * evict only that host's. A client a person approved (the registry knows it by its activity
 * mark, `client-registry.ts`) is fetched whatever the budget; the token endpoint needs no
 * document at all. So junk under a client's own host can delay only the first sign-in of that
 * host's clients not cached in this process, while the junk goes on.
 *
 * The fetch, or the resolver and the TLS connect, are injected: tests run the policy as pure
 * functions and against a fake or local https server, and each runtime passes what it has.
 *
 * @module
 */
import * as z from '../../../../shared/zod.ts';
import { readStreamWithin } from '../../../../shared/bounded-stream.ts';
import { ConnectError, fetchOverConnection, type ByteConnection, type ConnectTls } from './connection-fetch.ts';
import { invalidClient, OAuthError } from '../oauth-error.ts';
import { hostRefusal, isPublicAddress } from './address-policy.ts';
import { redirectUrisSchema, type OAuthClient } from './client-record.ts';
import { WriteBudget } from '../write-budget.ts';

export const METADATA_DOCUMENT_MAX_BYTES = 5 * 1024;
export const METADATA_DOCUMENT_TIMEOUT_MS = 5_000;
const CACHE_MIN_MS = 60_000;
const CACHE_MAX_MS = 86_400_000;
const CACHE_DEFAULT_MS = 300_000;
const CACHE_ENTRIES = 256;
const CACHE_ENTRIES_PER_HOST = 8;
const FAILURE_ENTRIES = 1024;

/**
 * The runtime's own network (Node, Deno): the name is resolved once, every address checked, and
 * the connection made to a checked address, TLS checked against the name.
 */
export interface DocumentNetwork {
  /** Every address a host name resolves to (every one must be public). */
  resolve(hostname: string): Promise<string[]>;
  connectTls: ConnectTls;
}

export interface MetadataDocumentFetchDeps {
  /** Where the runtime has no resolver (Workers): the URL fetched by name; `globalThis.fetch` by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** Where it has one: used instead of `fetch`. */
  network?: DocumentNetwork;
  now?: () => number;
  timeoutMs?: number;
  /** Failed fetches per URL host and minute at most (default {@link FAILED_FETCHES_PER_HOST_PER_MINUTE}). */
  fetchesPerHostPerMinute?: number;
  /** Fetches under way at once, at most (default {@link CONCURRENT_FETCHES}). */
  concurrentFetches?: number;
}

/** True when a client_id is meant as a metadata document URL (rather than a registered id). */
export function isMetadataDocumentClientId(clientId: string): boolean {
  return /^https?:\/\//i.test(clientId);
}

/** Why a client_id URL may not be fetched (the pure part of the policy), or null. */
export function metadataUrlRefusal(clientId: string): string | null {
  if (!URL.canParse(clientId)) return 'the client_id is not a URL';
  const url = new URL(clientId);
  if (url.protocol !== 'https:') return 'a client_id URL must use https';
  if (url.username !== '' || url.password !== '') return 'a client_id URL must not carry credentials';
  if (clientId.includes('#')) return 'a client_id URL must not have a fragment';
  if (url.pathname === '/' || url.pathname === '') return 'a client_id URL must have a path';
  if (/\/\.\.?(\/|$)/.test(clientId.slice(url.origin.length))) return 'a client_id URL must not contain dot segments';
  if (url.href !== clientId) return `a client_id URL must be in normal form ("${url.href}")`;
  return hostRefusal(url.hostname);
}

const documentSchema = z.lazily(() =>
  z.looseObject({
    client_id: z.string(),
    client_name: z.string().check(z.minLength(1), z.maxLength(200)),
    redirect_uris: redirectUrisSchema(),
    token_endpoint_auth_method: z.optional(z.string()),
    grant_types: z.optional(z.array(z.string())),
    response_types: z.optional(z.array(z.string())),
  }),
);

/** Reads at most `limit` bytes of a body; more is an error, whatever Content-Length said. */
async function readCapped(response: Response, limit: number): Promise<string> {
  const text = await readStreamWithin(response.body, limit);
  if (text === null) throw invalidClient(`The client metadata document is larger than ${limit} bytes`);
  return text;
}

/** Validates a fetched document against the URL it came from; the client it describes. */
export function parseMetadataDocument(clientId: string, text: string): OAuthClient {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalidClient('The client metadata document is not valid JSON');
  }
  const parsed = documentSchema().safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw invalidClient(`The client metadata document is invalid: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const doc = parsed.data;
  if (doc.client_id !== clientId) throw invalidClient(`The client metadata document names client_id "${doc.client_id.slice(0, 200)}", not the URL it was fetched from`);
  const method = doc.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') throw invalidClient(`Token endpoint auth method "${method.slice(0, 50)}" is not supported for metadata document clients: use "none" (a public client with PKCE)`);
  if (doc.grant_types !== undefined && !doc.grant_types.includes('authorization_code')) {
    throw invalidClient('The client metadata document does not list the authorization_code grant');
  }
  const refresh = doc.grant_types === undefined || doc.grant_types.includes('refresh_token');
  return { clientId, clientName: doc.client_name, redirectUris: doc.redirect_uris, authMethod: 'none', source: 'metadata-document', ...(refresh ? {} : { refreshGrant: false as const }) };
}

function cacheLifetime(response: Response): number {
  const header = response.headers.get('cache-control') ?? '';
  if (/\bno-store\b/i.test(header)) return CACHE_MIN_MS;
  const maxAge = /\bmax-age=(\d+)/i.exec(header);
  if (maxAge === null) return CACHE_DEFAULT_MS;
  return Math.min(CACHE_MAX_MS, Math.max(CACHE_MIN_MS, Number(maxAge[1]) * 1000));
}

/**
 * Failed fetches a process makes per URL host and minute, at most: each unknown URL is a fetch
 * of up to {@link METADATA_DOCUMENT_TIMEOUT_MS}, and a failure is not fetched again for
 * {@link FAILURE_TTL_MS}, so the worker cannot be made to fetch from one host at a stranger's pace.
 */
export const FAILED_FETCHES_PER_HOST_PER_MINUTE = 10;
export const FAILURE_TTL_MS = 60_000;
/** Hosts whose failed fetches are counted at once; the least recently counted is forgotten first. */
const COUNTED_HOSTS = 1024;
/**
 * Fetches under way at once, at most. Each holds a connection for up to the deadline, and the
 * per-host budget counts names: a stranger with a wildcard DNS name and a server that answers
 * nothing could make the worker hold a socket per name and run out of them, refusing every agent.
 */
export const CONCURRENT_FETCHES = 16;

/** Fetches, validates and caches metadata documents. */
export class MetadataDocumentClients {
  readonly #deps: Required<Omit<MetadataDocumentFetchDeps, 'network' | 'fetchesPerHostPerMinute' | 'concurrentFetches'>> & Pick<MetadataDocumentFetchDeps, 'network'>;
  /** Documents fetched well, least recently used first, with until when each may be served without a fetch. */
  readonly #documents = new Map<string, { client: OAuthClient; until: number }>();
  /** Why a URL could not be had, until it may be fetched again; apart, so junk never evicts a document. */
  readonly #failures = new Map<string, { error: OAuthError; until: number }>();
  /** Failed fetches per host in the last minute, least recently counted first. */
  readonly #hosts = new Map<string, WriteBudget>();
  readonly #perHost: number;
  readonly #concurrent: number;
  #fetching = 0;

  constructor(deps: MetadataDocumentFetchDeps = {}) {
    this.#deps = {
      fetch: deps.fetch ?? ((url, init) => fetch(url, init)),
      now: deps.now ?? Date.now,
      timeoutMs: deps.timeoutMs ?? METADATA_DOCUMENT_TIMEOUT_MS,
      ...(deps.network !== undefined ? { network: deps.network } : {}),
    };
    this.#perHost = deps.fetchesPerHostPerMinute ?? FAILED_FETCHES_PER_HOST_PER_MINUTE;
    this.#concurrent = deps.concurrentFetches ?? CONCURRENT_FETCHES;
  }

  /**
   * The client a document describes. `granted` says whether a person approved this client (it
   * holds a live grant): asked only when its host's failed-fetch budget is spent or
   * {@link CONCURRENT_FETCHES} are under way, and then the fetch goes ahead anyway.
   */
  async get(clientId: string, options: { granted?: () => Promise<boolean> } = {}): Promise<OAuthClient> {
    const now = this.#deps.now();
    const known = this.#documents.get(clientId);
    if (known !== undefined) {
      // Kept past its lifetime too: a document fetched well once is fetched again without a budget.
      this.#documents.delete(clientId);
      this.#documents.set(clientId, known);
      if (known.until > now) return known.client;
    }
    const failed = this.#failures.get(clientId);
    if (failed !== undefined && failed.until > now) throw failed.error;
    this.#failures.delete(clientId);
    // Asked at most once, and only when a limit would hold the fetch back (it may be a store read).
    let grant: Promise<boolean> | undefined;
    const granted = () => (grant ??= options.granted?.() ?? Promise.resolve(false));
    const refusal = metadataUrlRefusal(clientId);
    if (refusal !== null) throw invalidClient(`Client metadata document refused: ${refusal}`);
    // A document served before is fetched again for free; a URL never fetched well takes from its host's budget.
    const budget = known === undefined ? this.#budgetOf(new URL(clientId).hostname) : null;
    const slot = budget?.take() ?? null;
    // A client a person approved (a live grant) is never held back by strangers' junk under its host.
    if (budget !== null && slot === null && !(await granted())) {
      throw new OAuthError('temporarily_unavailable', `Too many client metadata documents from "${new URL(clientId).hostname}" failed in the last minute: try again in ${budget.minutesUntilFree()} min`, 429);
    }
    // A client a person approved is fetched however many strangers' fetches are under way: their number is bounded by people.
    if (this.#fetching >= this.#concurrent && !(await granted())) {
      slot?.refund();
      throw new OAuthError('temporarily_unavailable', `${this.#concurrent} client metadata documents are being fetched already: try again in a few seconds`, 503);
    }
    let entry: { client: OAuthClient; until: number };
    this.#fetching++;
    try {
      entry = await this.#fetchDocument(clientId);
    } catch (error) {
      if (!(error instanceof OAuthError)) {
        slot?.refund();
        throw error;
      }
      if (this.#failures.size >= FAILURE_ENTRIES) this.#failures.delete(this.#failures.keys().next().value!);
      this.#failures.set(clientId, { error, until: this.#deps.now() + FAILURE_TTL_MS });
      throw error;
    } finally {
      this.#fetching--;
    }
    // Only failures count: a host that serves documents is never held back.
    slot?.refund();
    this.#remember(clientId, entry);
    return entry.client;
  }

  /**
   * Caches a document fetched well. Each host keeps at most {@link CACHE_ENTRIES_PER_HOST}, its own
   * least recently used giving way first, so documents a stranger serves from their own host
   * evict only theirs; past {@link CACHE_ENTRIES} the least recently used of all goes.
   */
  #remember(clientId: string, entry: { client: OAuthClient; until: number }): void {
    const host = new URL(clientId).hostname;
    this.#documents.delete(clientId);
    const ofHost = [...this.#documents.keys()].filter((url) => new URL(url).hostname === host);
    if (ofHost.length >= CACHE_ENTRIES_PER_HOST) this.#documents.delete(ofHost[0]!);
    else if (this.#documents.size >= CACHE_ENTRIES) this.#documents.delete(this.#documents.keys().next().value!);
    this.#documents.set(clientId, entry);
  }

  /** The failed-fetch budget of `host`, made on first use; the least recently used one is forgotten past {@link COUNTED_HOSTS}. */
  #budgetOf(host: string): WriteBudget {
    const budget = this.#hosts.get(host) ?? new WriteBudget(this.#perHost, 60_000, this.#deps.now);
    this.#hosts.delete(host);
    if (this.#hosts.size >= COUNTED_HOSTS) this.#hosts.delete(this.#hosts.keys().next().value!);
    this.#hosts.set(host, budget);
    return budget;
  }

  /** Fetches, checks and parses one document, with how long it may be cached. */
  async #fetchDocument(clientId: string): Promise<{ client: OAuthClient; until: number }> {
    const url = new URL(clientId);
    const network = this.#deps.network;
    const pinned = network === undefined ? null : { connectTls: network.connectTls, addresses: await this.#checkAddresses(network, url.hostname) };
    // One deadline for the whole exchange, headers and body.
    const signal = AbortSignal.timeout(this.#deps.timeoutMs);
    const failed = (error: unknown) =>
      error instanceof OAuthError
        ? error
        : invalidClient(`Cannot fetch the client metadata document: ${signal.aborted ? `no answer within ${this.#deps.timeoutMs} ms` : (error as Error).message}`);
    let response: Response;
    let text: string;
    try {
      const headers = { accept: 'application/json' };
      response =
        pinned === null
          ? await this.#deps.fetch(clientId, { redirect: 'manual', headers, signal })
          : await fetchOverConnection(await connectToOneOf(pinned.connectTls, pinned.addresses, url, signal, this.#deps.timeoutMs), url, { headers, signal });
      if (response.status !== 200) {
        await response.body?.cancel();
        throw invalidClient(`Cannot fetch the client metadata document: it answered ${response.status}${response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : ''}`);
      }
      text = await readCapped(response, METADATA_DOCUMENT_MAX_BYTES);
    } catch (error) {
      throw failed(error);
    }
    const client = parseMetadataDocument(clientId, text);
    return { client, until: this.#deps.now() + cacheLifetime(response) };
  }

  /** The addresses `hostname` resolves to, every one of them public; refused otherwise. */
  async #checkAddresses(network: DocumentNetwork, hostname: string): Promise<string[]> {
    let addresses: string[];
    try {
      addresses = await network.resolve(hostname.replace(/^\[|\]$/g, ''));
    } catch (error) {
      // Named by its kind, not the resolver's own text (Deno's is a dump of its DNS query), since the sign-in page shows it.
      const kind = (error as { code?: unknown }).code ?? (error as Error).name;
      const why = kind === 'ENOTFOUND' || kind === 'ENODATA' || kind === 'NotFound' ? 'the name has no address' : `the lookup failed (${String(kind).slice(0, 40)})`;
      throw invalidClient(`Cannot resolve the client metadata host "${hostname}": ${why}`);
    }
    const bad = addresses.find((a) => !isPublicAddress(a));
    if (addresses.length === 0 || bad !== undefined) {
      throw invalidClient(`Client metadata document refused: "${hostname}" resolves to ${bad === undefined ? 'no address' : `${bad}, a loopback, private or reserved address`}`);
    }
    return addresses;
  }
}

/** The most of a name's addresses tried, however many it has: a stranger's DNS answer sets how many connections one sign-in makes. */
const ADDRESSES_TRIED = 4;

/**
 * The addresses with IPv6 and IPv4 taking turns, the first one's family first (RFC 8305 §4): a
 * host whose IPv6 has no route still reaches IPv4 within the first few tried.
 */
export function interleaveFamilies(addresses: readonly string[]): string[] {
  const first = addresses[0]?.includes(':') ?? false;
  const same = addresses.filter((a) => a.includes(':') === first);
  const other = addresses.filter((a) => a.includes(':') !== first);
  return Array.from({ length: Math.max(same.length, other.length) }, (_, i) => [same[i], other[i]]).flat().filter((a): a is string => a !== undefined);
}

/**
 * A TLS connection to the first of `addresses` that takes one: an address that refuses or stays
 * silent (IPv6 without a route) gives way to the next, the families taking turns. Each but the last tried gets an equal share
 * of the deadline, the last whatever is left. The first failure is the one named.
 */
async function connectToOneOf(connectTls: ConnectTls, addresses: readonly string[], url: URL, signal: AbortSignal, timeoutMs: number): Promise<ByteConnection> {
  const serverName = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port === '' ? 443 : Number(url.port);
  const tried = interleaveFamilies(addresses).slice(0, ADDRESSES_TRIED);
  const share = Math.floor(timeoutMs / tried.length);
  let first: unknown;
  for (const [i, address] of tried.entries()) {
    const last = i === tried.length - 1;
    const attempt = last ? signal : AbortSignal.any([signal, AbortSignal.timeout(share)]);
    try {
      return await connectTls({ address, port, serverName, signal: attempt });
    } catch (error) {
      if (signal.aborted) throw error;
      first ??= attempt.aborted ? new ConnectError('connect', `no answer within ${share} ms`) : error;
    }
  }
  if (first instanceof ConnectError && first.stage === 'tls') throw new Error(`the TLS handshake with "${serverName}" failed (${first.message})`);
  throw new Error(`cannot connect to "${serverName}" port ${port} (${first instanceof ConnectError ? first.message : 'the connection failed'})`);
}
