/**
 * Codes, grants and tokens of the built-in authorization server, on an `OAuthStore`.
 *
 * A **grant** is one approval: this client acts as this agent for this resource. Every code,
 * access token and refresh token points at its grant, and deleting the grant ends all of them at
 * once (revocation, reuse detection). Codes and tokens are random 256-bit secrets kept only as
 * their sha-256 (the record id).
 *
 * - a code lives 60 s and is redeemed once; a second redemption is refused and revokes its grant
 *   (RFC 6749 §4.1.2: the code may have been stolen);
 * - an access token lives `access-token-seconds`;
 * - a refresh token is replaced on every use (OAuth 2.1 §4.3.1, public clients); the used one is
 *   remembered until it would have expired, and presenting it again revokes the grant, unless
 *   within 10 s of its first use (`REFRESH_REUSE_GRACE_MS`: one client's requests refreshing at once).
 *
 * A grant also keeps the `token-sha256` of its agent and of whoever approved it (the agent, or the
 * admin) at that moment: once either token is changed or removed in the worker config, the grant's
 * tokens stop working and it cannot be refreshed (OAuth 2.1 §4.3.1: the owner's credentials
 * changed). Rotating a leaked token therefore also ends what was approved with it.
 *
 * @module
 */
import { invalidClient, invalidGrant, invalidRequest, OAuthError } from './oauth-error.ts';
import { pkceMatches, randomSecret, sha256Hex } from './oauth-crypto.ts';
import type { JsonValue, OAuthStore } from './oauth-store.ts';
import { silentWorkerLogger, type WorkerLogger } from '../../log.ts';

export const CODE_TTL_MS = 60_000;
/**
 * How long after its first use a replaced refresh token still refreshes instead of revoking its
 * grant: a client's requests that all met an expired access token refresh within a second or
 * two; a thief presenting a stolen one later is caught as before.
 */
export const REFRESH_REUSE_GRACE_MS = 10_000;
export const SCOPE = 'mcp';

export interface GrantOptions {
  accessTtlMs: number;
  refreshTtlMs: number;
  now?: () => number;
  /** Grants approved, revoked and ended by reuse; never a code or token. */
  log?: WorkerLogger;
  /** Whether the tokens that approved a grant are still those of the worker config (`Approval`). */
  stillApproved?: (approval: Approval) => boolean;
}

/** Who approved a grant: its agent's `token-sha256` and the approver's (the same, or the admin's), when it was approved. */
export interface Approval {
  agent: string;
  agentTokenSha256?: string;
  approverTokenSha256?: string;
}

interface GrantRecord {
  clientId: string;
  agent: string;
  resource: string;
  scope: string;
  createdAt: number;
  /** Absent from grants made before they were recorded: those count as no longer approved. */
  agentTokenSha256?: string;
  approverTokenSha256?: string;
  /** False for a client that did not register the refresh_token grant: its tokens come without a refresh token. */
  refresh?: false;
}

interface CodeRecord {
  grantId: string;
  clientId: string;
  redirectUri: string;
  /** False when the authorization request left redirect_uri out (the client's one registered URI was used): the token request may too. */
  redirectUriSent?: boolean;
  codeChallenge: string;
  resource: string;
}

/** When a refresh token was first used (its `.used` mark). */
interface UseMark {
  at: number;
}

interface TokenRecord {
  grantId: string;
  used?: true;
  /** An access token's resource, when narrower than its grant's. */
  resource?: string;
}

/** True when a grant for `granted` may issue a token for `requested`: the same, or the whole worker's base. */
function covers(granted: string, requested: string): boolean {
  return granted === requested || (new URL(granted).pathname === '/' && requested.startsWith(`${granted}/`));
}

/** What an access token stands for, once verified. */
export interface AccessTokenInfo {
  agent: string;
  clientId: string;
  resource: string;
  scope: string;
}

export interface IssuedTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  /** Absent for a client that did not register the refresh_token grant. */
  refresh_token?: string;
  scope: string;
}

export interface NewCode {
  clientId: string;
  redirectUri: string;
  redirectUriSent: boolean;
  codeChallenge: string;
  resource: string;
  scope: string;
  agent: string;
  agentTokenSha256: string;
  approverTokenSha256: string;
  /** The client's `refreshGrant`: false when it did not register the refresh_token grant. */
  refreshGrant?: false;
}

export const STALE_APPROVAL = 'The agent token or admin token that approved this app was changed or removed since: sign in again';

export const ACCESS_TOKEN_PREFIX = 'sya_';
const REFRESH_TOKEN_PREFIX = 'syr_';
const CODE_PREFIX = 'syc_';

const asRecord = <T>(value: JsonValue | undefined): T | undefined => (value === undefined ? undefined : (value as unknown as T));
const json = (value: object): JsonValue => value as unknown as JsonValue;

export class Grants {
  readonly #store: OAuthStore;
  readonly #options: Required<GrantOptions>;

  constructor(store: OAuthStore, options: GrantOptions) {
    this.#store = store;
    this.#options = { now: Date.now, log: silentWorkerLogger, stillApproved: () => true, ...options };
  }

  /** Records an approval and returns the one-time code for it. */
  async createCode(request: NewCode): Promise<string> {
    const now = this.#options.now();
    const grantId = randomSecret('');
    const grant: GrantRecord = {
      clientId: request.clientId,
      agent: request.agent,
      resource: request.resource,
      scope: request.scope,
      createdAt: now,
      agentTokenSha256: request.agentTokenSha256,
      approverTokenSha256: request.approverTokenSha256,
      ...(request.refreshGrant === false ? { refresh: false as const } : {}),
    };
    await this.#store.put('grant', grantId, json(grant), now + this.#options.refreshTtlMs);
    const code = randomSecret(CODE_PREFIX);
    const record: CodeRecord = { grantId, clientId: request.clientId, redirectUri: request.redirectUri, redirectUriSent: request.redirectUriSent, codeChallenge: request.codeChallenge, resource: request.resource };
    await this.#store.put('code', await sha256Hex(code), json(record), now + CODE_TTL_MS);
    this.#options.log.info('OAuth grant approved', { client: request.clientId, agent: request.agent, resource: request.resource });
    return code;
  }

  /**
   * The authorization_code grant: one redemption per code, with PKCE and the same redirect URI.
   * A request that is merely wrong (another client, another redirect URI, a resource the grant
   * does not cover) is refused before the code is used up, so the right one still works; a wrong
   * PKCE verifier uses it up and revokes its grant (whoever sent it may hold a stolen code).
   *
   * A code is used up by writing its redemption mark (`add`: the first writer's stays), not by
   * taking its record, which stays until it expires: so a second redemption, even one that
   * arrives while the first is still under way, finds the code and the first one's mark, and
   * revokes the grant, as a replay must. (Taking the record let a redemption that came just
   * after the take see no code at all, "unknown", and revoke nothing.)
   */
  async redeemCode(input: { code: string; clientId: string; redirectUri: string | undefined; codeVerifier: string; resource?: string }): Promise<IssuedTokens> {
    const id = await sha256Hex(input.code);
    const record = asRecord<CodeRecord>(await this.#store.get('code', id));
    if (record === undefined) throw invalidGrant('The authorization code is unknown or expired');
    const markId = `${id}.redeemed`;
    if ((await this.#store.get('code', markId)) !== undefined) throw await this.#replayed(record);
    if (record.clientId !== input.clientId) throw invalidGrant('The authorization code was issued to another client');
    if (input.redirectUri === undefined && record.redirectUriSent !== false) throw invalidRequest('Missing redirect_uri: the authorization request sent one, and this request must repeat it');
    if (input.redirectUri !== undefined && record.redirectUri !== input.redirectUri) throw invalidGrant('The redirect_uri differs from the one of the authorization request');
    if (input.resource !== undefined && !covers(record.resource, input.resource)) {
      throw new OAuthError('invalid_target', `The resource "${input.resource}" is not covered by the authorization request's ("${record.resource}")`);
    }
    const mark = randomSecret('');
    const kept = await this.#store.add('code', markId, mark, this.#options.now() + CODE_TTL_MS);
    if (kept !== mark) throw await this.#replayed(record);
    if (!(await pkceMatches(input.codeVerifier, record.codeChallenge))) {
      await this.#store.delete('grant', record.grantId);
      throw invalidGrant('PKCE verification failed: the code_verifier does not match the code_challenge');
    }
    const grant = await this.#grant(record.grantId);
    if (grant === undefined) throw invalidGrant('The grant of this authorization code was revoked');
    if (!this.#options.stillApproved(grant)) throw invalidGrant(STALE_APPROVAL);
    return this.#issue(record.grantId, grant, input.resource ?? grant.resource);
  }

  /** A code presented again: its grant, and every token issued from it, is revoked. */
  async #replayed(record: CodeRecord): Promise<OAuthError> {
    await this.#store.delete('grant', record.grantId);
    this.#options.log.warn('OAuth authorization code presented twice: its grant is revoked', { client: record.clientId });
    return invalidGrant('The authorization code was already used: every token issued from it is revoked');
  }

  /**
   * The refresh_token grant: rotates the refresh token; a replaced one presented again revokes
   * the grant, unless within {@link REFRESH_REUSE_GRACE_MS} of its first use, when it is
   * refreshed once more (a client's requests that met an expired access token together each
   * refresh with the one token it holds: the MCP SDK's client does, from its GET stream and a
   * POST). `resource` may narrow a grant for the whole worker to one endpoint (RFC 8707 §2.2).
   *
   * A refresh token is used up by writing its use mark (`add`: the first writer's stays), not by
   * taking its record, which stays until it expires: so a second use arriving while the first is
   * still under way finds the token and the first one's mark, as one arriving later does.
   */
  async refresh(input: { refreshToken: string; clientId: string; resource?: string }): Promise<IssuedTokens> {
    const id = await sha256Hex(input.refreshToken);
    const record = asRecord<TokenRecord>(await this.#store.get('refresh', id));
    if (record === undefined) throw invalidGrant('The refresh token is unknown, expired or revoked');
    const grant = await this.#grant(record.grantId);
    const markId = `${id}.used`;
    const now = this.#options.now();
    // A record marked used is one of a version that took it to use it: when, it did not say.
    const used = record.used === true ? { at: 0 } : asRecord<UseMark>(await this.#store.get('refresh', markId));
    if (used !== undefined && now - used.at > REFRESH_REUSE_GRACE_MS) {
      await this.#store.delete('grant', record.grantId);
      this.#options.log.warn('OAuth refresh token reused: its grant is revoked', { client: grant?.clientId ?? null, agent: grant?.agent ?? null });
      throw invalidGrant('The refresh token was already used: the grant is revoked (sign in again)');
    }
    if (grant === undefined) throw invalidGrant('The refresh token was revoked');
    if (grant.clientId !== input.clientId) throw invalidGrant('The refresh token was issued to another client');
    if (!this.#options.stillApproved(grant)) {
      await this.#store.delete('grant', record.grantId);
      this.#options.log.info('OAuth grant ended: a token that approved it was changed', { client: grant.clientId, agent: grant.agent });
      throw invalidGrant(STALE_APPROVAL);
    }
    const resource = input.resource ?? grant.resource;
    if (!covers(grant.resource, resource)) {
      throw new OAuthError('invalid_target', `The resource "${resource}" is not covered by the grant ("${grant.resource}")`);
    }
    // The first use marks the token; a use that loses the race to mark it is one within the grace, as is any later one.
    if (used === undefined) await this.#store.add('refresh', markId, json({ at: now }), grant.createdAt + this.#options.refreshTtlMs);
    // A refreshed grant lives another refresh lifetime.
    const renewed: GrantRecord = { ...grant, createdAt: now };
    await this.#store.put('grant', record.grantId, json(renewed), renewed.createdAt + this.#options.refreshTtlMs);
    return this.#issue(record.grantId, renewed, resource);
  }

  /** RFC 7009: revokes the grant behind an access or refresh token of `clientId`; unknown tokens are ignored. */
  async revoke(token: string, clientId: string): Promise<void> {
    const id = await sha256Hex(token);
    const record = asRecord<TokenRecord>((await this.#store.get('access', id)) ?? (await this.#store.get('refresh', id)));
    if (record === undefined) return;
    const grant = await this.#grant(record.grantId);
    if (grant !== undefined && grant.clientId !== clientId) throw invalidClient('The token was issued to another client', 400);
    await this.#store.delete('grant', record.grantId);
    await this.#store.delete('access', id);
    await this.#store.delete('refresh', id);
    this.#options.log.info('OAuth grant revoked', { client: clientId, agent: grant?.agent ?? null });
  }

  /**
   * What a live access token stands for, or null (unknown, expired, or its grant revoked);
   * `stale` when a token that approved its grant has been changed since (it must not be honoured).
   */
  async verifyAccessToken(token: string): Promise<(AccessTokenInfo & { stale: boolean }) | null> {
    if (!token.startsWith(ACCESS_TOKEN_PREFIX)) return null;
    const record = asRecord<TokenRecord>(await this.#store.get('access', await sha256Hex(token)));
    if (record === undefined) return null;
    const grant = await this.#grant(record.grantId);
    if (grant === undefined) return null;
    return { agent: grant.agent, clientId: grant.clientId, resource: record.resource ?? grant.resource, scope: grant.scope, stale: !this.#options.stillApproved(grant) };
  }

  async #grant(id: string): Promise<GrantRecord | undefined> {
    return asRecord<GrantRecord>(await this.#store.get('grant', id));
  }

  async #issue(grantId: string, grant: GrantRecord, resource = grant.resource): Promise<IssuedTokens> {
    const now = this.#options.now();
    const access = randomSecret(ACCESS_TOKEN_PREFIX);
    await this.#store.put('access', await sha256Hex(access), json({ grantId, ...(resource !== grant.resource ? { resource } : {}) }), now + this.#options.accessTtlMs);
    const expiresIn = Math.floor(this.#options.accessTtlMs / 1000);
    if (grant.refresh === false) return { access_token: access, token_type: 'Bearer', expires_in: expiresIn, scope: grant.scope };
    const refresh = randomSecret(REFRESH_TOKEN_PREFIX);
    await this.#store.put('refresh', await sha256Hex(refresh), json({ grantId }), grant.createdAt + this.#options.refreshTtlMs);
    return { access_token: access, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refresh, scope: grant.scope };
  }
}
