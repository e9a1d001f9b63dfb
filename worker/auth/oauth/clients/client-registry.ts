/**
 * Finds the client behind a `client_id`: an https URL is a Client ID Metadata Document (when
 * enabled), anything else a client from Dynamic Client Registration (RFC 7591, when enabled).
 * Registration is open, as RFC 7591 allows, because registering grants nothing: every client
 * still needs a person's approval on the consent page.
 *
 * Registration writes nothing. The `client_id` it issues is the registration itself, a sealed
 * value (`server-key.ts`): `sy-client.<payload>.<mac>`, the payload holding the redirect URIs, the
 * name, the token endpoint auth method, the issue time and a random nonce (so two identical
 * registrations get two clients). A confidential client's secret is the MAC of its client_id,
 * derived again to check it and compared in constant time. So what it accepts is bounded to keep
 * the client_id short enough for a URL: {@link MAX_REDIRECT_URIS} redirect URIs of at most
 * {@link MAX_REDIRECT_URI_LENGTH} bytes once JSON-encoded, {@link MAX_REDIRECT_URIS_TOTAL} together,
 * and a name of at most {@link MAX_CLIENT_NAME_LENGTH} characters and {@link MAX_CLIENT_NAME_BYTES} bytes.
 *
 * Lifetime: a client that gets no token within {@link UNUSED_CLIENT_TTL_MS} of registering is
 * refused after that (register again); one that gets tokens is marked active (a small record,
 * written by the token endpoint, so only after a person approved it), which lasts as long as a
 * refresh token would, renewed each time it gets tokens.
 *
 * Clients registered before, kept as records (`sy-client-` + 30 characters), are looked up and
 * kept alive as they always were.
 *
 * @module
 */
import * as z from '../../../../shared/zod.ts';
import { encodeBase64Url } from '../../../../shared/base64url.ts';
import { invalidClient, invalidRequest, OAuthError } from '../oauth-error.ts';
import { sha256Hex, stringsEqual } from '../oauth-crypto.ts';
import type { JsonValue, OAuthStore } from '../oauth-store.ts';
import type { ServerKey } from '../server-key.ts';
import { redirectUrisSchema, type OAuthClient, type TokenEndpointAuthMethod } from './client-record.ts';
import { isMetadataDocumentClientId, metadataUrlRefusal, type MetadataDocumentClients } from './metadata-document.ts';

export const MAX_REDIRECT_URIS = 8;
export const MAX_REDIRECT_URI_LENGTH = 512;
export const MAX_REDIRECT_URIS_TOTAL = 1024;
export const MAX_CLIENT_NAME_LENGTH = 100;
/** The name's bound in encoded bytes: with the redirect URIs' bounds, no client_id exceeds {@link MAX_CLIENT_ID_LENGTH}. */
export const MAX_CLIENT_NAME_BYTES = 300;
/** No client_id is longer: a registered one by its bounds, a metadata document URL by this check. */
export const MAX_CLIENT_ID_LENGTH = 2048;

/** How long a registered client may wait for its first token. */
export const UNUSED_CLIENT_TTL_MS = 86_400_000;

const CLIENT_ID_PREFIX = 'sy-client.';
const SECRET_PREFIX = 'sycs_';
/** The ids of clients registered as records, before client ids were sealed: `randomSecret('sy-client-').slice(0, 40)`. */
const STORED_CLIENT_ID = /^sy-client-[A-Za-z0-9_-]{30}$/;
/** Sealed client_ids remembered as still opening (`stillIssued`); past it the memory starts again. */
const STILL_ISSUED_KEPT = 1024;

/** A value's size in the client_id: its UTF-8 bytes once JSON-encoded (a control character is 6, `é` 2). */
const encodedBytes = (text: string) => encoder.encode(JSON.stringify(text)).length - 2;
const encoder = new TextEncoder();

const registrationSchema = z.lazily(() =>
  z.looseObject({
    redirect_uris: redirectUrisSchema().check(
      z.maxLength(MAX_REDIRECT_URIS, `at most ${MAX_REDIRECT_URIS} redirect URIs`),
      z.superRefine((uris: string[], ctx) => {
        uris.forEach((uri, i) => {
          const bytes = encodedBytes(uri);
          if (bytes > MAX_REDIRECT_URI_LENGTH) ctx.addIssue({ code: 'custom', path: [i], message: `too long: ${bytes} bytes once encoded, at most ${MAX_REDIRECT_URI_LENGTH}` });
        });
        const total = uris.reduce((sum, uri) => sum + encodedBytes(uri), 0);
        if (total > MAX_REDIRECT_URIS_TOTAL) ctx.addIssue({ code: 'custom', message: `too long together: ${total} bytes once encoded, at most ${MAX_REDIRECT_URIS_TOTAL}: register fewer or shorter redirect URIs` });
      }),
    ),
    client_name: z.optional(
      z.string().check(
        z.minLength(1),
        z.maxLength(MAX_CLIENT_NAME_LENGTH, `too long: at most ${MAX_CLIENT_NAME_LENGTH} characters`),
        z.refine((name: string) => encodedBytes(name) <= MAX_CLIENT_NAME_BYTES, `too long once encoded: at most ${MAX_CLIENT_NAME_BYTES} bytes (a control character counts 6, a non-ASCII one 2 to 4)`),
      ),
    ),
    token_endpoint_auth_method: z.optional(z.enum(['none', 'client_secret_post', 'client_secret_basic'])),
    grant_types: z
      .optional(z.array(z.string()))
      .check(z.refine((g) => g === undefined || (g.includes('authorization_code') && g.every((t) => t === 'authorization_code' || t === 'refresh_token')), 'supported grant types: authorization_code, refresh_token')),
    response_types: z
      .optional(z.array(z.string()))
      .check(z.refine((r) => r === undefined || r.every((t) => t === 'code'), 'the only supported response type is "code"')),
  }),
);

/** What a sealed client_id holds. */
const clientIdPayloadSchema = z.lazily(() =>
  z.strictObject({
    r: z.array(z.string()).check(z.minLength(1)),
    n: z.optional(z.string()),
    a: z.enum(['none', 'client_secret_post', 'client_secret_basic']),
    /** Issued at, seconds since the epoch. */
    t: z.number(),
    /** A random nonce: two registrations alike are still two clients. */
    j: z.string(),
    /** The grant types registered, when not both (`authorization_code` alone): no refresh token is issued. */
    g: z.optional(z.array(z.enum(['authorization_code', 'refresh_token']))),
  }),
);

export interface ClientRegistryOptions {
  /** Client ID Metadata Documents; null when disabled. */
  metadataDocuments: MetadataDocumentClients | null;
  /** Dynamic Client Registration enabled. */
  registration: boolean;
  /** How long a registered client that gets tokens is kept after its last token request. */
  activeTtlMs: number;
  /** The key that seals client ids and derives client secrets. */
  key: ServerKey;
  now?: () => number;
}

export class ClientRegistry {
  readonly #store: OAuthStore;
  readonly #options: ClientRegistryOptions;
  readonly #now: () => number;
  readonly #stillIssued = new Set<string>();

  constructor(store: OAuthStore, options: ClientRegistryOptions) {
    this.#store = store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  get registrationEnabled(): boolean {
    return this.#options.registration;
  }

  get metadataDocumentsEnabled(): boolean {
    return this.#options.metadataDocuments !== null;
  }

  /**
   * The client for `clientId`; `invalid_client` naming why when there is none. `graceMs` lets a
   * registered client that has not yet got a token finish a sign-in it began within
   * {@link UNUSED_CLIENT_TTL_MS}: the consent form's lifetime when it is answered, plus the code's
   * at the token endpoint.
   */
  async get(clientId: string, options: { graceMs?: number } = {}): Promise<OAuthClient> {
    if (clientId === '') throw invalidRequest('Missing client_id');
    if (clientId.length > MAX_CLIENT_ID_LENGTH) throw invalidClient(`The client_id is longer than ${MAX_CLIENT_ID_LENGTH} characters`);
    if (isMetadataDocumentClientId(clientId)) {
      const documents = this.#options.metadataDocuments;
      if (documents === null) throw invalidClient('Client ID Metadata Documents are disabled on this server: register the client instead');
      return documents.get(clientId, { granted: () => this.#marked(clientId) });
    }
    if (clientId.startsWith(CLIENT_ID_PREFIX)) return this.#sealed(clientId, options.graceMs ?? 0);
    const record = STORED_CLIENT_ID.test(clientId) ? await this.#store.get('client', clientId) : undefined;
    if (record === undefined) throw invalidClient(`Unknown client "${clientId.slice(0, 100)}": register it first`);
    return record as unknown as OAuthClient;
  }

  /**
   * The client of a token-endpoint request (a code, a refresh token or a revocation). A metadata
   * document's client is taken by its URL alone, its document not fetched: the code or token it
   * presents was issued to that exact client_id after a person approved the client as its document
   * described it, and a public client is authenticated by nothing else. So a document host that is
   * down, or a stranger's junk under it, never keeps an approved client from its tokens.
   */
  async forTokenRequest(clientId: string, options: { graceMs?: number } = {}): Promise<OAuthClient> {
    if (clientId === '' || clientId.length > MAX_CLIENT_ID_LENGTH || !isMetadataDocumentClientId(clientId)) return this.get(clientId, options);
    if (this.#options.metadataDocuments === null) throw invalidClient('Client ID Metadata Documents are disabled on this server: register the client instead');
    const refusal = metadataUrlRefusal(clientId);
    if (refusal !== null) throw invalidClient(`Client metadata document refused: ${refusal}`);
    return { clientId, clientName: clientId, redirectUris: [], authMethod: 'none', source: 'metadata-document' };
  }

  /**
   * Whether the tokens of `clientId`'s grants may still be honoured: false for a sealed client_id
   * none of the server's keys opens any more (a key dropped after a leak ends its clients, and
   * with them what they hold). A yes is kept: keys change only with a restart.
   */
  async stillIssued(clientId: string): Promise<boolean> {
    if (!clientId.startsWith(CLIENT_ID_PREFIX) || this.#stillIssued.has(clientId)) return true;
    const opened = (await this.#options.key.open('client-id', clientId.slice(CLIENT_ID_PREFIX.length))) !== undefined;
    if (opened) {
      if (this.#stillIssued.size >= STILL_ISSUED_KEPT) this.#stillIssued.clear();
      this.#stillIssued.add(clientId);
    }
    return opened;
  }

  /** True when the client holds an activity mark: it got tokens, after a person approved it. */
  async #marked(clientId: string): Promise<boolean> {
    return (await this.#store.get('client', await sha256Hex(clientId))) !== undefined;
  }

  /** The client a sealed client_id describes, once its MAC and its lifetime are checked. */
  async #sealed(clientId: string, graceMs: number): Promise<OAuthClient> {
    const payload = clientIdPayloadSchema().safeParse(await this.#options.key.open('client-id', clientId.slice(CLIENT_ID_PREFIX.length)));
    if (!payload.success) throw invalidClient('Invalid client_id: it was altered, or not issued by this server (or under a key it no longer holds): register the client again');
    const { r: redirectUris, n: name, a: authMethod, t: issuedAt, g: grantTypes } = payload.data;
    if (this.#now() - issuedAt * 1000 > UNUSED_CLIENT_TTL_MS + graceMs && !(await this.#marked(clientId))) {
      throw invalidClient(`Client registration expired: it got no token within ${UNUSED_CLIENT_TTL_MS / 3_600_000} hours of registering: remove this server from the app and add it again, so that the app registers again`);
    }
    return { clientId, clientName: name ?? 'Unnamed client', redirectUris, authMethod, source: 'registration', ...(grantTypes !== undefined && !grantTypes.includes('refresh_token') ? { refreshGrant: false as const } : {}) };
  }

  /** True when `secret` is the client's secret (constant time): derived from a sealed client_id, or the stored hash of an older one. */
  async secretMatches(client: OAuthClient, secret: string): Promise<boolean> {
    if (client.authMethod === 'none' || client.source !== 'registration') return false;
    if (client.secretSha256 !== undefined) return stringsEqual(await sha256Hex(secret), client.secretSha256);
    if (!client.clientId.startsWith(CLIENT_ID_PREFIX)) return false;
    // Under any of the server's keys: one rotated out of sealing still vouches for the ids it sealed.
    return secret.startsWith(SECRET_PREFIX) && (await this.#options.key.verify('client-secret', client.clientId, secret.slice(SECRET_PREFIX.length)));
  }

  async #secretOf(clientId: string): Promise<string> {
    return `${SECRET_PREFIX}${await this.#options.key.mac('client-secret', clientId)}`;
  }

  /**
   * Marks a client that just got tokens as in use for another refresh-token lifetime: a
   * registered one is kept past {@link UNUSED_CLIENT_TTL_MS}, a metadata document's is fetched
   * whatever its host's failed-fetch budget.
   */
  async touch(client: OAuthClient): Promise<void> {
    const until = this.#now() + this.#options.activeTtlMs;
    if (client.clientId.startsWith(CLIENT_ID_PREFIX) || client.source === 'metadata-document') {
      // Keyed by the id's hash: a sealed id is long, and the mark says only that it is in use.
      await this.#store.put('client', await sha256Hex(client.clientId), { active: true }, until);
      return;
    }
    await this.#store.put('client', client.clientId, client as unknown as JsonValue, until);
  }

  /** RFC 7591 §3: registers a client, writing nothing; the response (201) carries its id and, when confidential, its secret. */
  async register(body: unknown): Promise<Record<string, unknown>> {
    if (!this.#options.registration) throw invalidRequest('Dynamic Client Registration is disabled on this server', 404);
    const parsed = registrationSchema().safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join('.') || '(root)';
      const code = String(issue.path[0]) === 'redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata';
      throw new OAuthError(code, `${field}: ${issue.message}`);
    }
    const meta = parsed.data;
    const authMethod: TokenEndpointAuthMethod = meta.token_endpoint_auth_method ?? 'client_secret_basic';
    const issuedAt = Math.floor(this.#now() / 1000);
    const payload: z.infer<ReturnType<typeof clientIdPayloadSchema>> = {
      r: meta.redirect_uris,
      ...(meta.client_name !== undefined ? { n: meta.client_name } : {}),
      a: authMethod,
      t: issuedAt,
      j: encodeBase64Url(crypto.getRandomValues(new Uint8Array(9))),
      ...(meta.grant_types !== undefined && !meta.grant_types.includes('refresh_token') ? { g: ['authorization_code' as const] } : {}),
    };
    const clientId = `${CLIENT_ID_PREFIX}${await this.#options.key.seal('client-id', payload)}`;
    if (clientId.length > MAX_CLIENT_ID_LENGTH) {
      // Not reached: the bounds above, in encoded bytes, keep every client_id shorter.
      throw new OAuthError('invalid_client_metadata', `The registration is too long once encoded in the client_id (${clientId.length} characters, at most ${MAX_CLIENT_ID_LENGTH}): use a shorter client_name or fewer redirect URIs`);
    }
    const secret = authMethod === 'none' ? undefined : await this.#secretOf(clientId);
    return {
      client_id: clientId,
      client_id_issued_at: issuedAt,
      ...(secret !== undefined ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      client_name: meta.client_name ?? 'Unnamed client',
      redirect_uris: meta.redirect_uris,
      token_endpoint_auth_method: authMethod,
      grant_types: payload.g ?? ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }
}
