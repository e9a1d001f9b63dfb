/**
 * OAuth 2.1 end to end, as Claude's or ChatGPT's connector meets it: the MCP SDK client's own
 * OAuth support (`authProvider` on the Streamable HTTP transport) starts a login, headless
 * Chromium (playwright-core) signs in on the worker's consent page with an agent token and
 * approves, the callback receives the code (with `iss` and `state`), and the client calls tools
 * through `/mcp` (a legacy session) and sends a modern (2026-07-28) stateless request to
 * `/servers/echo/mcp`. Then: refresh through the SDK, the state surviving a worker restart,
 * revocation, and every refusal the issue lists.
 *
 * Both worker runtimes that hold state: Deno (the worker process users run, with a real sidecar
 * linked over the real link) and Node (the single-machine mode, servers in-process).
 */
import { createServer, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeOAuthRuntime } from '../../cli/oauth-state.ts';
import { startSingleMachine, type SingleMachine } from '../../cli/single-machine.ts';
import { parseWorkerConfig } from '../../worker/config/worker-config.ts';
import { encodeBase64Url as base64url } from '../../shared/base64url.ts';
import { agentEntry } from '../support/configs.ts';
import { modernPost } from '../modern/modern-client.ts';
import { MemoryOAuthProvider } from '../support/oauth.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

const ECHO = fixtureServer('echo-server.mjs');
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const BROWSER_TEST = { timeout: 120_000 };

/** A worker with the built-in authorization server, whichever runtime runs it. */
interface Target {
  url: string;
  aliceToken: string;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function denoTarget(): Promise<Target> {
  const stack: Stack = await startStack({ servers: { echo: ECHO }, worker: { oauth: { 'built-in': {} } } });
  return {
    url: stack.url,
    aliceToken: stack.tokens.alice!,
    restart: async () => {
      await stack.restartWorker();
      await stack.waitLinked();
    },
    stop: () => stack.stop(),
  };
}

async function nodeTarget(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-oauth-node-'));
  mkdirSync(join(dir, 'mcp-servers'), { recursive: true });
  writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { echo: ECHO } }));
  writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ 'allow-uncontained': true }));
  const aliceToken = `alice-${base64url(crypto.getRandomValues(new Uint8Array(16)))}`;
  const config = parseWorkerConfig(
    { agents: [agentEntry({ name: 'alice', token: aliceToken, servers: ['echo'] })], servers: { echo: { executor: { type: 'local' } } }, oauth: { 'built-in': {} } },
    { runtime: 'node' },
  );
  let port = 0;
  let machine: SingleMachine;
  const start = async () => {
    const oauth = (await nodeOAuthRuntime(config, join(dir, 'state')))!;
    machine = await startSingleMachine({ config, configDir: dir, port, oauth });
    port = Number(new URL(machine.url).port);
  };
  await start();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    aliceToken,
    restart: async () => {
      await machine.close();
      await start();
    },
    stop: async () => {
      await machine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The client's redirect target: records each callback's query and answers a page. */
async function callbackServer(): Promise<{ url: string; next(): Promise<URLSearchParams>; close(): Promise<void> }> {
  const waiting: Array<(q: URLSearchParams) => void> = [];
  const arrived: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    // Chromium also asks this origin for /favicon.ico: only the callback path counts.
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    const query = url.searchParams;
    const waiter = waiting.shift();
    if (waiter !== undefined) waiter(query);
    else arrived.push(query);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You may close this window.');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    next: () => (arrived.length > 0 ? Promise.resolve(arrived.shift()!) : new Promise((resolve) => waiting.push(resolve))),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe.each([
  ['Deno', denoTarget],
  ['Node', nodeTarget],
] as const)('OAuth in a browser, worker under %s', (_runtime, makeTarget) => {
  let target: Target;
  let callback: Awaited<ReturnType<typeof callbackServer>>;
  const clients: Client[] = [];

  beforeAll(async () => {
    target = await makeTarget();
    callback = await callbackServer();
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await callback?.close();
    await target?.stop();
  }, 60_000);

  /** Signs in on the consent page in a fresh browser context and approves; the callback's query. */
  async function approveInBrowser(authorizationUrl: URL | string, token: string): Promise<URLSearchParams> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(String(authorizationUrl));
      await page.locator('#sign-in-form').waitFor();
      await page.fill('#token', token);
      const back = callback.next();
      await page.click('#sign-in-button');
      await page.locator('#approve-form').waitFor();
      expect(await page.locator('#signed-in-as').textContent()).toContain('Signed in as agent alice');
      expect(await page.locator('#redirect-host').textContent()).toBe(new URL(callback.url).host);
      await page.locator('#loopback-warning').waitFor();
      await page.selectOption('#agent', 'alice');
      await page.click('#approve-button');
      return await back;
    } finally {
      await context.close();
    }
  }

  /** What a page says when the request cannot go back to the client. */
  async function errorShown(url: string): Promise<string> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const response = await page.goto(url);
      expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
      await page.locator('#oauth-error').waitFor();
      return `${await page.locator('#error-code').textContent()}: ${await page.locator('#error-message').textContent()}`;
    } finally {
      await context.close();
    }
  }

  let provider: MemoryOAuthProvider;

  async function connect(path: string): Promise<Client> {
    const client = new Client({ name: 'oauth-browser-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${target.url}${path}`), { authProvider: provider }));
    clients.push(client);
    return client;
  }

  it('the SDK client logs in through the consent page in Chromium and calls a tool on /mcp and a modern request', BROWSER_TEST, async () => {
    let returned: URLSearchParams | undefined;
    provider = new MemoryOAuthProvider(callback.url, async (url) => {
      returned = await approveInBrowser(url, target.aliceToken);
    });
    const transport = new StreamableHTTPClientTransport(new URL(`${target.url}/mcp`), { authProvider: provider });
    const first = new Client({ name: 'oauth-browser-test', version: '1' });
    await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(returned!.get('iss')).toBe(target.url);
    expect(returned!.get('state')).toBe('test-state-123');
    await transport.finishAuth(returned!.get('code')!);
    expect(provider.savedTokens?.access_token).toMatch(/^sya_/);

    const client = await connect('/mcp');
    expect(await client.callTool({ name: 'echo__echo', arguments: { message: 'via oauth' } })).toEqual({ content: [{ type: 'text', text: 'Echo: via oauth' }] });

    // The token is bound to /mcp: one server's endpoint refuses it, saying why.
    const echoUrl = `${target.url}/servers/echo/mcp`;
    const elsewhere = await modernPost(echoUrl, provider.savedTokens!.access_token, 'tools/call', { name: 'echo', arguments: { message: 'x' } });
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.response.error.message).toBe(`Invalid bearer token: the token was issued for another resource ("${target.url}/mcp")`);

    // A modern (stateless) agent logs in for that endpoint, through the same consent page.
    let back: URLSearchParams | undefined;
    const modernAgent = new MemoryOAuthProvider(callback.url, async (url) => {
      back = await approveInBrowser(url, target.aliceToken);
    });
    expect(await auth(modernAgent, { serverUrl: echoUrl })).toBe('REDIRECT');
    expect(await auth(modernAgent, { serverUrl: echoUrl, authorizationCode: back!.get('code')! })).toBe('AUTHORIZED');
    const modern = await modernPost(echoUrl, modernAgent.savedTokens!.access_token, 'tools/call', { name: 'echo', arguments: { message: 'modern' } });
    expect(modern.status).toBe(200);
    expect(modern.response.result.content).toEqual([{ type: 'text', text: 'Echo: modern' }]);
  });

  it('refreshes through the SDK when the access token is refused, rotating the refresh token', BROWSER_TEST, async () => {
    const before = provider.savedTokens!;
    provider.savedTokens = { ...before, access_token: 'sya_no-longer-valid' };
    const client = await connect('/mcp');
    expect(await client.callTool({ name: 'echo__echo', arguments: { message: 'refreshed' } })).toEqual({ content: [{ type: 'text', text: 'Echo: refreshed' }] });
    expect(provider.savedTokens!.access_token).not.toBe(before.access_token);
    expect(provider.savedTokens!.refresh_token).not.toBe(before.refresh_token);
  });

  it('keeps clients and tokens across a worker restart', BROWSER_TEST, async () => {
    await target.restart();
    const client = await connect('/mcp');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo__echo');
  });

  it('revocation ends access', BROWSER_TEST, async () => {
    const { access_token } = provider.savedTokens!;
    const revoke = await fetch(`${target.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: access_token, client_id: provider.clientInfo!.client_id }).toString(),
    });
    expect(revoke.status).toBe(200);
    const after = await modernPost(`${target.url}/servers/echo/mcp`, access_token, 'tools/call', { name: 'echo', arguments: { message: 'x' } });
    expect(after.status).toBe(401);
    const refresh = await fetch(`${target.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: provider.savedTokens!.refresh_token!, client_id: provider.clientInfo!.client_id }).toString(),
    });
    expect(((await refresh.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('refuses a foreign redirect URI, a loopback metadata document, another resource (on a page, never redirected), a wrong verifier and a replayed code', BROWSER_TEST, async () => {
    const clientId = provider.clientInfo!.client_id;
    const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
    const authorize = (overrides: Record<string, string> = {}) => {
      const url = new URL(`${target.url}/oauth/authorize`);
      const params = { response_type: 'code', client_id: clientId, redirect_uri: callback.url, code_challenge: challenge, code_challenge_method: 'S256', state: 'st', resource: `${target.url}/mcp`, ...overrides };
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      return url.href;
    };
    expect(await errorShown(authorize({ redirect_uri: 'https://attacker.example/callback' }))).toBe(
      'invalid_request: The redirect_uri "https://attacker.example/callback" is not registered for this client: nothing was sent to it',
    );
    expect(await errorShown(authorize({ client_id: 'https://127.0.0.1/client.json' }))).toBe('invalid_client: Client metadata document refused: "127.0.0.1" is a loopback, private or reserved address');

    // Another resource: shown on the page too, not redirected to a client no person has approved yet.
    expect(await errorShown(authorize({ resource: 'https://other.example/mcp' }))).toMatch(/^invalid_target: The resource "https:\/\/other\.example\/mcp" is not served here/);

    const token = (fields: Record<string, string>) =>
      fetch(`${target.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId, redirect_uri: callback.url, ...fields }).toString(),
      });
    const wrong = await token({ code: (await approveInBrowser(authorize(), target.aliceToken)).get('code')!, code_verifier: base64url(new Uint8Array(32)) });
    expect(await wrong.json()).toEqual({ error: 'invalid_grant', error_description: 'PKCE verification failed: the code_verifier does not match the code_challenge' });

    const code = (await approveInBrowser(authorize(), target.aliceToken)).get('code')!;
    expect((await token({ code, code_verifier: verifier })).status).toBe(200);
    expect(await (await token({ code, code_verifier: verifier })).json()).toEqual({ error: 'invalid_grant', error_description: 'The authorization code was already used: every token issued from it is revoked' });
  });
});
