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
 * - an access token lives `access-token-seconds`, and a grant keeps two at most: each refresh
 *   issues the next generation's, `sya_<grant id>.<generation>.<secret>` (derived as its refresh
 *   token is, so every use of one token within the grace gets the same one), and ends the one
 *   two generations back, which its client has replaced twice;
 * - a refresh token is replaced on every use (OAuth 2.1 §4.3.1, public clients), and presenting a
 *   replaced one again revokes the grant, unless within 10 s of its first use
 *   (`REFRESH_REUSE_GRACE_MS`: one client's requests refreshing at once), which get the same
 *   successor. A grant's refresh tokens form one chain, `syr_<grant id>.<generation>.<secret>`,
 *   whose records stay few however often it is refreshed (`refresh` below).
 *
 * A grant also keeps the `token-sha256` of its agent and of whoever approved it (the agent, or the
 * admin) at that moment: once either token is changed or removed in the worker config, the grant's
 * tokens stop working and it cannot be refreshed (OAuth 2.1 §4.3.1: the owner's credentials
 * changed). Rotating a leaked token therefore also ends what was approved with it.
 *
 * A grant that ends is told to `onEnded`, which ends the agent sessions opened with its access
 * tokens (`SessionTable.endGrants`): a revoked grant leaves no stream open.
 *
 * @module
 */
import { invalidClient, invalidGrant, invalidRequest, OAuthError } from './oauth-error.ts';
import { pkceMatches, randomSecret, sha256Hex, stringsEqual } from './oauth-crypto.ts';
import { decodeBase64Url, encodeBase64Url } from '../../../shared/base64url.ts';
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
  /** Told of a grant ended (revoked, reused, its approval stale), why, and its agent where the grant was still recorded, before the request that ended it is answered. */
  onEnded?: (grantId: string, why: string, agent?: string) => Promise<unknown> | void;
}

/** Who approved a grant: its agent's `token-sha256` and the approver's (the same, or the admin's), when it was approved. */
export interface Approval {
  agent: string;
  agentTokenSha256?: string;
  approverTokenSha256?: string;
}

/**
 * The grant an access token stands for, as a session opened with the token keeps it: its id (the
 * grant ending ends the session) and its approval (a reload that makes it stale does too).
 */
export interface AccessGrant extends Approval {
  id: string;
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
  /** Every generation below this one was used and its records pruned: presented again, it is a reuse. */
  refreshFloor?: number;
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

/**
 * When a refresh token was first used, and the successor that use fixed (record
 * `refresh:<grant id>.<generation>`; for a token from before chains, its `.used` mark). The
 * successor is the HMAC of `nonce` under the used token's own secret: only whoever holds the used
 * token can have it, and every use within the grace gets the same one, so one token never forks
 * into two live chains. Marks from before chains have neither `nonce` nor `next`.
 */
interface UseMark {
  at: number;
  nonce?: string;
  /** The sha-256 of the successor: what the next generation is checked against. */
  next?: string;
}

interface TokenRecord {
  grantId: string;
  used?: true;
  /** An access token's resource, when narrower than its grant's. */
  resource?: string;
  /** An access token of a grant's chain: its sha-256 (the record id is its grant and generation). */
  hash?: string;
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
  grant: AccessGrant;
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
/** A refresh token of a grant's chain: its grant id, its generation and its 256-bit secret. */
const CHAIN_TOKEN = /^syr_([A-Za-z0-9_-]{43})\.(0|[1-9][0-9]{0,8})\.([A-Za-z0-9_-]{43})$/;
/** A refresh token from before chains: 256 random bits, found by its hash. */
const SINGLE_TOKEN = /^syr_([A-Za-z0-9_-]{43})$/;
/**
 * An access token of a grant's chain, found by its grant and generation. One that does not match
 * (from before chains, or one a refresh within the grace could not share) is found by its hash.
 */
const CHAIN_ACCESS_TOKEN = /^sya_([A-Za-z0-9_-]{43})\.(0|[1-9][0-9]{0,8})\.([A-Za-z0-9_-]{43})$/;

interface ChainToken {
  grantId: string;
  generation: number;
  secret: string;
}

const linkId = (grantId: string, generation: number) => `${grantId}.${generation}`;

/** The tokens one refresh hands out: the next refresh token and the access token of its generation. */
interface Successors {
  refresh: string;
  access: string;
}

/**
 * The refresh token that follows the one whose secret is `secret`, as generation `generation` of
 * `grantId`'s chain, and that generation's access token: both MACs of `nonce` under the used
 * token's secret, so only its holder can have them and every use within the grace gets the same.
 */
async function successor(grantId: string, generation: number, secret: string, nonce: string): Promise<Successors> {
  const key = await crypto.subtle.importKey('raw', decodeBase64Url(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = async (text: string) => encodeBase64Url(new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(text))));
  return {
    refresh: `${REFRESH_TOKEN_PREFIX}${grantId}.${generation}.${await mac(`${grantId}.${generation}.${nonce}`)}`,
    access: `${ACCESS_TOKEN_PREFIX}${grantId}.${generation}.${await mac(`access.${grantId}.${generation}.${nonce}`)}`,
  };
}

const REUSED = 'The refresh token was already used: the grant is revoked (sign in again)';
const REUSED_EARLY = 'The refresh token was used moments ago by the version of this worker before its upgrade: use the refresh token that answer gave, or sign in again';

function parseChainToken(token: string): ChainToken | undefined {
  const m = CHAIN_TOKEN.exec(token);
  return m === null ? undefined : { grantId: m[1]!, generation: Number(m[2]), secret: m[3]! };
}
const UNKNOWN_REFRESH = 'The refresh token is unknown, expired or revoked';

/**
 * Whether grant `id` still stands in `store`: not ended, not expired. For a session held where its
 * grant's end is not told (a Durable Object of its own on Workers), which asks as it sweeps.
 */
export async function grantStands(store: OAuthStore, id: string): Promise<boolean> {
  return (await store.get('grant', id)) !== undefined;
}

const asRecord = <T>(value: JsonValue | undefined): T | undefined => (value === undefined ? undefined : (value as unknown as T));
const json = (value: object): JsonValue => value as unknown as JsonValue;

export class Grants {
  readonly #store: OAuthStore;
  readonly #options: Required<GrantOptions>;

  constructor(store: OAuthStore, options: GrantOptions) {
    this.#store = store;
    this.#options = { now: Date.now, log: silentWorkerLogger, stillApproved: () => true, onEnded: () => {}, ...options };
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
    if ((await this.#store.get('code', markId)) !== undefined) throw await this.#replayed(record, id);
    if (record.clientId !== input.clientId) throw invalidGrant('The authorization code was issued to another client');
    if (input.redirectUri === undefined && record.redirectUriSent !== false) throw invalidRequest('Missing redirect_uri: the authorization request sent one, and this request must repeat it');
    if (input.redirectUri !== undefined && record.redirectUri !== input.redirectUri) throw invalidGrant('The redirect_uri differs from the one of the authorization request');
    if (input.resource !== undefined && !covers(record.resource, input.resource)) {
      throw new OAuthError('invalid_target', `The resource "${input.resource}" is not covered by the authorization request's ("${record.resource}")`);
    }
    const mark = randomSecret('');
    const kept = await this.#store.add('code', markId, mark, this.#options.now() + CODE_TTL_MS);
    if (kept !== mark) throw await this.#replayed(record, id);
    if (!(await pkceMatches(input.codeVerifier, record.codeChallenge))) {
      // So that the right verifier sent next is told what used the code up: no token was issued from it.
      await this.#store.put('code', `${id}.refused`, '1', this.#options.now() + CODE_TTL_MS);
      await this.#end(record.grantId, 'its OAuth grant was revoked: a wrong PKCE verifier was sent for its code');
      throw invalidGrant('PKCE verification failed: the code_verifier does not match the code_challenge');
    }
    const grant = await this.#grant(record.grantId);
    if (grant === undefined) throw invalidGrant('The grant of this authorization code was revoked');
    if (!this.#options.stillApproved(grant)) throw invalidGrant(STALE_APPROVAL);
    const access = `${ACCESS_TOKEN_PREFIX}${record.grantId}.0.${randomSecret('')}`;
    if (grant.refresh === false) return this.#issue(record.grantId, grant, input.resource ?? grant.resource, { access, generation: 0 });
    // The chain's first token; each later one is derived from the one before (`refresh`).
    const first = `${REFRESH_TOKEN_PREFIX}${record.grantId}.0.${randomSecret('')}`;
    await this.#startChain(record.grantId, first, grant.createdAt + this.#options.refreshTtlMs);
    return this.#issue(record.grantId, grant, input.resource ?? grant.resource, { access, generation: 0, refresh: first });
  }

  /** A code presented again: its grant, and every token issued from it, is revoked. */
  async #replayed(record: CodeRecord, id: string): Promise<OAuthError> {
    await this.#end(record.grantId, 'its OAuth grant was revoked: its authorization code was presented twice');
    this.#options.log.warn('OAuth authorization code presented twice: its grant is revoked', { client: record.clientId });
    if ((await this.#store.get('code', `${id}.refused`)) !== undefined) {
      return invalidGrant('The authorization code was used up by a request with a wrong code_verifier, and no token was issued from it: sign in again');
    }
    return invalidGrant('The authorization code was already used: every token issued from it is revoked');
  }

  /**
   * The refresh_token grant: rotates the refresh token; a replaced one presented again revokes
   * the grant, unless within {@link REFRESH_REUSE_GRACE_MS} of its first use, when it gets the
   * same successor again (a client's requests that met an expired access token together each
   * refresh with the one token it holds: the MCP SDK's client does, from its GET stream and a
   * POST). `resource` may narrow a grant for the whole worker to one endpoint (RFC 8707 §2.2).
   *
   * A token is used up by writing its use mark (`add`: the first writer's stays, and with it the
   * one successor), so a second use arriving while the first is still under way finds the first
   * one's mark, as one arriving later does. A chain keeps only its last two marks: each use
   * prunes the mark two generations back and raises the grant's floor, below which a token is a
   * reuse without a record to look up. So a grant holds a handful of records however often it is
   * refreshed, where one kept per token grew by three records a refresh.
   */
  async refresh(input: { refreshToken: string; clientId: string; resource?: string; scope?: string }): Promise<IssuedTokens> {
    const chain = parseChainToken(input.refreshToken);
    if (chain === undefined) return this.#refreshSingle(input);
    const grant = await this.#grant(chain.grantId);
    if (grant === undefined) throw invalidGrant(UNKNOWN_REFRESH);
    const markId = linkId(chain.grantId, chain.generation);
    const standing = await this.#standing(chain, grant, input.refreshToken);
    if (standing === 'unknown') throw invalidGrant(UNKNOWN_REFRESH);
    // Another client's request ends nothing: a token below the floor cannot be told from a forgery naming the grant.
    if (grant.clientId !== input.clientId) throw invalidGrant('The refresh token was issued to another client');
    const used = standing === 'old' ? { at: 0 } : asRecord<UseMark>(await this.#store.get('refresh', markId));
    const now = this.#options.now();
    if (used !== undefined && now - used.at > REFRESH_REUSE_GRACE_MS) throw await this.#reused(chain.grantId, grant);
    const resource = await this.#refreshable(chain.grantId, grant, input);
    const next = await this.#successor(markId, used, now, (nonce) => successor(chain.grantId, chain.generation + 1, chain.secret, nonce));
    if (next.fresh) {
      if (chain.generation >= 1) await this.#store.delete('refresh', linkId(chain.grantId, chain.generation - 2));
      // The access token before the one this token came with: its client has two newer ones.
      if (chain.generation >= 1) await this.#store.delete('access', linkId(chain.grantId, chain.generation - 1));
      // A refreshed grant lives another refresh lifetime.
      await this.#renew(chain.grantId, { ...grant, createdAt: now, refreshFloor: Math.max(grant.refreshFloor ?? 0, chain.generation) });
    }
    return this.#issue(chain.grantId, grant, resource, { access: next.tokens.access, generation: chain.generation + 1, refresh: next.tokens.refresh });
  }

  /**
   * Records the first token of a grant's chain, as the mark of generation -1 (generation g's
   * hash is in the mark of g - 1): a record of its own, as the grant is never written here, so a
   * grant revoked meanwhile (a code replayed at once) stays revoked.
   */
  async #startChain(grantId: string, first: string, expiresAt: number): Promise<void> {
    await this.#store.put('refresh', linkId(grantId, -1), json({ at: this.#options.now(), next: await sha256Hex(first) }), expiresAt);
  }

  /**
   * Whether a chain token is one this grant issued: `genuine` when its hash is the one recorded
   * for its generation, `old` when its generation is below the floor (its record was pruned),
   * else `unknown` (a generation not issued yet, or a secret that is not the one issued).
   */
  async #standing(chain: ChainToken, grant: GrantRecord, token: string): Promise<'genuine' | 'old' | 'unknown'> {
    if (chain.generation < (grant.refreshFloor ?? 0)) return 'old';
    const expected = asRecord<UseMark>(await this.#store.get('refresh', linkId(chain.grantId, chain.generation - 1)))?.next;
    return expected !== undefined && stringsEqual(expected, await sha256Hex(token)) ? 'genuine' : 'unknown';
  }

  /** The checks a refresh passes before it uses its token up: the grant, its client, its approval; the resource it is for. */
  async #refreshable(grantId: string, grant: GrantRecord | undefined, input: { clientId: string; resource?: string; scope?: string }): Promise<string> {
    if (grant === undefined) throw invalidGrant('The refresh token was revoked');
    if (grant.clientId !== input.clientId) throw invalidGrant('The refresh token was issued to another client');
    // RFC 6749 §6: a refresh may keep or narrow the scope granted, never add to it. `mcp` is the
    // only scope there is, so a narrower one is none, and the grant's is issued as it stands.
    const granted = grant.scope.split(' ');
    const beyond = input.scope?.split(' ').filter((s) => s !== '' && !granted.includes(s)) ?? [];
    if (beyond.length > 0) throw new OAuthError('invalid_scope', `The scope "${beyond.join(' ').slice(0, 100)}" was not granted ("${grant.scope}"): refresh without scope, or sign in again for more`);
    if (!this.#options.stillApproved(grant)) {
      await this.#end(grantId, 'its OAuth grant ended: the agent token or admin token that approved it was changed or removed');
      this.#options.log.info('OAuth grant ended: a token that approved it was changed', { client: grant.clientId, agent: grant.agent });
      throw invalidGrant(STALE_APPROVAL);
    }
    const resource = input.resource ?? grant.resource;
    if (!covers(grant.resource, resource)) {
      throw new OAuthError('invalid_target', `The resource "${resource}" is not covered by the grant ("${grant.resource}")`);
    }
    return resource;
  }

  /**
   * The successor of a token whose use mark is `markId`: the first use writes the mark with a
   * fresh nonce (`fresh`); a use within the grace, or one that lost the race to write it, takes
   * the nonce already there, and so the same successor.
   */
  async #successor(markId: string, used: UseMark | undefined, now: number, derive: (nonce: string) => Promise<Successors>): Promise<{ tokens: Successors; fresh: boolean }> {
    if (used !== undefined) {
      // Marked by a version before chains, within the grace: its successor cannot be told again.
      if (used.nonce === undefined) throw invalidGrant(REUSED_EARLY);
      return { tokens: await derive(used.nonce), fresh: false };
    }
    const nonce = randomSecret('');
    const tokens = await derive(nonce);
    const mark: UseMark = { at: now, nonce, next: await sha256Hex(tokens.refresh) };
    const kept = asRecord<UseMark>(await this.#store.add('refresh', markId, json(mark), now + this.#options.refreshTtlMs))!;
    if (kept.nonce === nonce) return { tokens, fresh: true };
    if (kept.nonce === undefined) throw invalidGrant(REUSED_EARLY);
    return { tokens: await derive(kept.nonce), fresh: false };
  }

  /**
   * The refresh_token grant for a token from before chains (found by its hash): used, it starts
   * its grant's chain, whose generation 0 is derived from it as any successor is.
   */
  async #refreshSingle(input: { refreshToken: string; clientId: string; resource?: string; scope?: string }): Promise<IssuedTokens> {
    const single = SINGLE_TOKEN.exec(input.refreshToken);
    const id = await sha256Hex(input.refreshToken);
    const record = single === null ? undefined : asRecord<TokenRecord>(await this.#store.get('refresh', id));
    if (record === undefined) throw invalidGrant(UNKNOWN_REFRESH);
    const grant = await this.#grant(record.grantId);
    const markId = `${id}.used`;
    const now = this.#options.now();
    // A record marked used is one of a version that took it to use it: when, it did not say.
    const used = record.used === true ? { at: 0 } : asRecord<UseMark>(await this.#store.get('refresh', markId));
    if (used !== undefined && now - used.at > REFRESH_REUSE_GRACE_MS) throw await this.#reused(record.grantId, grant);
    const resource = await this.#refreshable(record.grantId, grant, input);
    const next = await this.#successor(markId, used, now, (nonce) => successor(record.grantId, 0, single![1]!, nonce));
    if (next.fresh) {
      await this.#startChain(record.grantId, next.tokens.refresh, now + this.#options.refreshTtlMs);
      await this.#renew(record.grantId, { ...grant!, createdAt: now });
    }
    return this.#issue(record.grantId, grant!, resource, { access: next.tokens.access, generation: 0, refresh: next.tokens.refresh });
  }

  /**
   * Ends a grant: its end mark first (`<id>.ended`, kept as long as the grant could have lived),
   * then the grant. A refresh renews its grant by writing it whole, and one that read it before
   * this deleted it would write it back; it looks for the mark after its write (`#renew`). Then
   * the sessions its tokens opened end (`onEnded`), `why` telling their agent.
   */
  async #end(grantId: string, why: string): Promise<void> {
    // Its agent, read before the record goes: on Workers it names the object that finds the sessions to end.
    const agent = (await this.#grant(grantId))?.agent;
    await this.#store.add('grant', `${grantId}.ended`, json({ at: this.#options.now() }), this.#options.now() + this.#options.refreshTtlMs);
    await this.#store.delete('grant', grantId);
    await this.#options.onEnded(grantId, why, agent);
  }

  /**
   * Writes a refreshed grant, unless it was ended meanwhile: an end marked before this write's
   * look is seen and the grant deleted again (the refresh fails); one marked after deletes it
   * itself, after this write. Either way no grant an end deleted lives on.
   */
  async #renew(grantId: string, grant: GrantRecord): Promise<void> {
    await this.#store.put('grant', grantId, json(grant), grant.createdAt + this.#options.refreshTtlMs);
    if ((await this.#store.get('grant', `${grantId}.ended`)) === undefined) return;
    await this.#store.delete('grant', grantId);
    throw invalidGrant('The refresh token was revoked');
  }

  /** A replaced refresh token presented past the grace: its grant, and every token issued from it, is revoked. */
  async #reused(grantId: string, grant: GrantRecord | undefined): Promise<OAuthError> {
    await this.#end(grantId, 'its OAuth grant was revoked: a replaced refresh token of it was presented again');
    this.#options.log.warn('OAuth refresh token reused: its grant is revoked', { client: grant?.clientId ?? null, agent: grant?.agent ?? null });
    return invalidGrant(REUSED);
  }

  /**
   * RFC 7009: revokes the grant behind an access or refresh token of `clientId`; unknown tokens
   * are ignored, as is a chain token this grant cannot tell from a forgery any more (below its
   * floor: a client revokes the token it holds last).
   */
  async revoke(token: string, clientId: string): Promise<void> {
    const grantId = await this.#grantIdOf(token);
    if (grantId === undefined) return;
    const grant = await this.#grant(grantId);
    if (grant !== undefined && grant.clientId !== clientId) throw invalidClient('The token was issued to another client', 400);
    await this.#end(grantId, 'its OAuth grant was revoked by the app');
    const id = await sha256Hex(token);
    await this.#store.delete('access', id);
    await this.#store.delete('refresh', id);
    this.#options.log.info('OAuth grant revoked', { client: clientId, agent: grant?.agent ?? null });
  }

  /** The grant an issued token stands for, or undefined when it is not one this server can vouch for. */
  async #grantIdOf(token: string): Promise<string | undefined> {
    const chain = parseChainToken(token);
    if (chain !== undefined) {
      const grant = await this.#grant(chain.grantId);
      return grant !== undefined && (await this.#standing(chain, grant, token)) === 'genuine' ? chain.grantId : undefined;
    }
    const access = await this.#chainAccess(token);
    if (access !== undefined) return access.grantId;
    const id = await sha256Hex(token);
    return asRecord<TokenRecord>((await this.#store.get('access', id)) ?? (await this.#store.get('refresh', id)))?.grantId;
  }

  /** The record of an access token of a grant's chain, when `token` is one and is the one issued; else undefined. */
  async #chainAccess(token: string): Promise<TokenRecord | undefined> {
    const chain = CHAIN_ACCESS_TOKEN.exec(token);
    if (chain === null) return undefined;
    const record = asRecord<TokenRecord>(await this.#store.get('access', linkId(chain[1]!, Number(chain[2]))));
    return record?.hash !== undefined && stringsEqual(record.hash, await sha256Hex(token)) ? record : undefined;
  }

  /**
   * What a live access token stands for, or null (unknown, expired, or its grant revoked);
   * `stale` when a token that approved its grant has been changed since (it must not be honoured).
   */
  async verifyAccessToken(token: string): Promise<(AccessTokenInfo & { stale: boolean }) | null> {
    if (!token.startsWith(ACCESS_TOKEN_PREFIX)) return null;
    const record = (await this.#chainAccess(token)) ?? asRecord<TokenRecord>(await this.#store.get('access', await sha256Hex(token)));
    if (record === undefined) return null;
    const grant = await this.#grant(record.grantId);
    if (grant === undefined) return null;
    const approval: AccessGrant = { id: record.grantId, agent: grant.agent, agentTokenSha256: grant.agentTokenSha256, approverTokenSha256: grant.approverTokenSha256 };
    return { agent: grant.agent, clientId: grant.clientId, resource: record.resource ?? grant.resource, scope: grant.scope, grant: approval, stale: !this.#options.stillApproved(grant) };
  }

  async #grant(id: string): Promise<GrantRecord | undefined> {
    return asRecord<GrantRecord>(await this.#store.get('grant', id));
  }

  /**
   * `tokens.access` for `resource`, as generation `tokens.generation`'s, with `tokens.refresh`
   * unless the client takes none. Every use of one refresh token within the grace issues the same
   * access token, recorded once (`add`: the first writer's stays); one that asked for another
   * resource than the first cannot share it, and gets a random one of its own, found by its hash.
   */
  async #issue(grantId: string, grant: GrantRecord, resource: string, tokens: { access: string; generation: number; refresh?: string }): Promise<IssuedTokens> {
    const expiresAt = this.#options.now() + this.#options.accessTtlMs;
    const narrowed = resource !== grant.resource ? { resource } : {};
    const hash = await sha256Hex(tokens.access);
    const kept = asRecord<TokenRecord>(await this.#store.add('access', linkId(grantId, tokens.generation), json({ grantId, hash, ...narrowed }), expiresAt))!;
    let access = tokens.access;
    if (kept.hash !== hash || (kept.resource ?? grant.resource) !== resource) {
      access = randomSecret(ACCESS_TOKEN_PREFIX);
      await this.#store.put('access', await sha256Hex(access), json({ grantId, ...narrowed }), expiresAt);
    }
    const expiresIn = Math.floor(this.#options.accessTtlMs / 1000);
    if (grant.refresh === false || tokens.refresh === undefined) return { access_token: access, token_type: 'Bearer', expires_in: expiresIn, scope: grant.scope };
    return { access_token: access, token_type: 'Bearer', expires_in: expiresIn, refresh_token: tokens.refresh, scope: grant.scope };
  }
}
