/**
 * Finds the client behind a `client_id`: an https URL is a Client ID Metadata Document (when
 * enabled), anything else a client from Dynamic Client Registration (RFC 7591, when enabled),
 * kept in the store. Registration is open, as RFC 7591 allows, because registering grants
 * nothing: every client still needs a person's approval on the consent page. So that open
 * registration cannot fill the state file, a registered client lives an hour until it first gets
 * tokens (a sign-in takes minutes), then as long as a refresh token would, renewed each time it
 * gets tokens; and a process registers at most `REGISTRATIONS_PER_HOUR` clients an hour.
 *
 * @module
 */
import * as z from '../../../../shared/zod.ts';
import { invalidClient, invalidRequest, OAuthError } from '../oauth-error.ts';
import { randomSecret, sha256Hex } from '../oauth-crypto.ts';
import type { JsonValue, OAuthStore } from '../oauth-store.ts';
import { RedirectUrisSchema, type OAuthClient } from './client-record.ts';
import { WriteBudget } from '../write-budget.ts';
import { isMetadataDocumentClientId, type MetadataDocumentClients } from './metadata-document.ts';


const RegistrationSchema = z.looseObject({
  redirect_uris: RedirectUrisSchema,
  client_name: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  token_endpoint_auth_method: z.optional(z.enum(['none', 'client_secret_post', 'client_secret_basic'])),
  grant_types: z
    .optional(z.array(z.string()))
    .check(z.refine((g) => g === undefined || (g.includes('authorization_code') && g.every((t) => t === 'authorization_code' || t === 'refresh_token')), 'supported grant types: authorization_code, refresh_token')),
  response_types: z
    .optional(z.array(z.string()))
    .check(z.refine((r) => r === undefined || r.every((t) => t === 'code'), 'the only supported response type is "code"')),
});

export interface ClientRegistryOptions {
  /** Client ID Metadata Documents; null when disabled. */
  metadataDocuments: MetadataDocumentClients | null;
  /** Dynamic Client Registration enabled. */
  registration: boolean;
  /** How long a registered client that gets tokens is kept after its last token request. */
  activeTtlMs: number;
  now?: () => number;
  /** Registrations a process accepts per hour; default {@link REGISTRATIONS_PER_HOUR}. */
  registrationsPerHour?: number | undefined;
}

export const REGISTRATIONS_PER_HOUR = 200;

/** How long a registered client is kept before it ever gets a token. */
export const UNUSED_CLIENT_TTL_MS = 3_600_000;

export class ClientRegistry {
  readonly #store: OAuthStore;
  readonly #options: ClientRegistryOptions;
  readonly #registrations: WriteBudget;

  constructor(store: OAuthStore, options: ClientRegistryOptions) {
    this.#store = store;
    this.#options = options;
    this.#registrations = new WriteBudget(options.registrationsPerHour ?? REGISTRATIONS_PER_HOUR, 3_600_000, options.now ?? Date.now);
  }

  get registrationEnabled(): boolean {
    return this.#options.registration;
  }

  get metadataDocumentsEnabled(): boolean {
    return this.#options.metadataDocuments !== null;
  }

  /** The client for `clientId`; `invalid_client` naming why when there is none. */
  async get(clientId: string): Promise<OAuthClient> {
    if (clientId === '') throw invalidRequest('Missing client_id');
    if (isMetadataDocumentClientId(clientId)) {
      const documents = this.#options.metadataDocuments;
      if (documents === null) throw invalidClient('Client ID Metadata Documents are disabled on this server: register the client instead');
      return documents.get(clientId);
    }
    const record = await this.#store.get('client', clientId);
    if (record === undefined) throw invalidClient(`Unknown client "${clientId.slice(0, 100)}": register it first`);
    return record as unknown as OAuthClient;
  }

  /** Keeps a registered client that just got tokens for another refresh-token lifetime. */
  async touch(client: OAuthClient): Promise<void> {
    if (client.source !== 'registration') return;
    await this.#store.put('client', client.clientId, client as unknown as JsonValue, (this.#options.now ?? Date.now)() + this.#options.activeTtlMs);
  }

  /** RFC 7591 §3: registers a client; the response (201) carries its id and, when confidential, its secret (never stored). */
  async register(body: unknown): Promise<Record<string, unknown>> {
    if (!this.#options.registration) throw invalidRequest('Dynamic Client Registration is disabled on this server', 404);
    const parsed = RegistrationSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join('.') || '(root)';
      const code = String(issue.path[0]) === 'redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata';
      throw new OAuthError(code, `${field}: ${issue.message}`);
    }
    const meta = parsed.data;
    if (!this.#registrations.take()) {
      throw new OAuthError('temporarily_unavailable', `Too many clients registered in the last hour: try again in ${this.#registrations.minutesUntilFree()} min`, 429);
    }
    const authMethod = meta.token_endpoint_auth_method ?? 'client_secret_basic';
    const clientId = randomSecret('sy-client-').slice(0, 40);
    const secret = authMethod === 'none' ? undefined : randomSecret('sycs_');
    const client: OAuthClient = {
      clientId,
      clientName: meta.client_name ?? 'Unnamed client',
      redirectUris: meta.redirect_uris,
      authMethod,
      ...(secret !== undefined ? { secretSha256: await sha256Hex(secret) } : {}),
      source: 'registration',
    };
    const now = (this.#options.now ?? Date.now)();
    await this.#store.put('client', clientId, client as unknown as JsonValue, now + UNUSED_CLIENT_TTL_MS);
    const issuedAt = Math.floor(now / 1000);
    return {
      client_id: clientId,
      client_id_issued_at: issuedAt,
      ...(secret !== undefined ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      client_name: client.clientName,
      redirect_uris: client.redirectUris,
      token_endpoint_auth_method: authMethod,
      grant_types: meta.grant_types ?? ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }
}
