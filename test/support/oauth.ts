/**
 * OAuth pieces for tests: an in-memory `OAuthClientProvider` for the MCP SDK client (what a
 * real MCP client keeps on disk), and a consent driven over plain HTTP (what a person does in
 * the browser; the browser test drives the same pages with Chromium instead).
 *
 * @module
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** An SDK OAuth provider holding everything in memory; `onRedirect` receives the authorization URL. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  clientInfo: OAuthClientInformationMixed | undefined;
  savedTokens: OAuthTokens | undefined;
  verifier = '';
  lastAuthorizationUrl: URL | undefined;
  readonly clientMetadataUrl?: string;

  constructor(
    readonly redirect: string,
    readonly onRedirect: (url: URL) => void | Promise<void> = () => {},
    options: { clientMetadataUrl?: string; clientName?: string; grantTypes?: string[] } = {},
  ) {
    if (options.clientMetadataUrl !== undefined) this.clientMetadataUrl = options.clientMetadataUrl;
    this.clientName = options.clientName ?? 'Switchyard test client';
    this.grantTypes = options.grantTypes ?? ['authorization_code', 'refresh_token'];
  }

  readonly clientName: string;
  readonly grantTypes: string[];

  get redirectUrl(): string {
    return this.redirect;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: this.clientName, redirect_uris: [this.redirect], grant_types: this.grantTypes, response_types: ['code'], token_endpoint_auth_method: 'none' };
  }

  state(): string {
    return 'test-state-123';
  }

  clientInformation() {
    return this.clientInfo;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.clientInfo = info;
  }

  tokens() {
    return this.savedTokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.savedTokens = tokens;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.lastAuthorizationUrl = url;
    await this.onRedirect(url);
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

/** The value of `<input name="…" value="…">` in a page. */
export function hiddenField(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (m === null) throw new Error(`No field "${name}" in the page:\n${html.slice(0, 2000)}`);
  return m[1]!;
}

export interface ConsentResult {
  /** The redirect the approval answered with (code, state, iss), or the error page's response. */
  location: URL | null;
  response: Response;
}

/**
 * Signs in on the consent page with `token` and approves for `agent` (default: the first one
 * offered), over plain HTTP with the page's cookie; `step: 'deny'` denies instead.
 */
export async function consentOverHttp(fetchFn: FetchLike, authorizationUrl: URL | string, token: string, options: { agent?: string; step?: 'approve' | 'deny' } = {}): Promise<ConsentResult> {
  const first = await fetchFn(authorizationUrl, { redirect: 'manual' });
  if (first.status !== 200) return { location: first.headers.has('location') ? new URL(first.headers.get('location')!) : null, response: first };
  const page = await first.text();
  const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0]!;
  const origin = new URL(authorizationUrl).origin;
  const post = (fields: Record<string, string>) =>
    fetchFn(`${origin}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin },
      body: new URLSearchParams(fields).toString(),
    });
  const consent = hiddenField(page, 'consent');
  const csrf = hiddenField(page, 'csrf');
  const signedIn = await post({ consent, csrf, step: 'sign-in', token });
  if (signedIn.status !== 200) return { location: null, response: signedIn };
  const approve = await signedIn.text();
  const agent = options.agent ?? /<option value="([^"]+)"/.exec(approve)?.[1] ?? '';
  // The approval form carries its own sealed request, now with who signed in.
  const answer = await post({ consent: hiddenField(approve, 'consent'), csrf, step: options.step ?? 'approve', agent });
  const location = answer.headers.get('location');
  return { location: location === null ? null : new URL(location), response: answer };
}
