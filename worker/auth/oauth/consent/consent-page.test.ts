import { describe, expect, it } from 'vitest';
import { approvePage, shownText, signInPage, type ClientSummary } from './consent-page.ts';

const client = (clientName: string): ClientSummary => ({ clientName, clientId: 'https://app.example.com/client.json', redirectUri: 'http://127.0.0.1:33418/callback', loopbackOnly: true });

describe('what a client chose to be called, on the consent pages', () => {
  it('writes out line breaks, bidi controls and other unseen characters, and leaves the rest as it is', () => {
    expect(shownText('Visual Studio Code\nApproved by admin')).toBe('Visual Studio Code\\nApproved by admin');
    expect(shownText('Claude\u202Eevil')).toBe('Claude\\u202Eevil');
    expect(shownText('\r\t\u0000\u007F\u0085\u061C\u200B\u200E\u200F\u202A\u202D\u2028\u2066\u2069\uFEFF\u{E0041}')).toBe(
      '\\r\\t\\u0000\\u007F\\u0085\\u061C\\u200B\\u200E\\u200F\\u202A\\u202D\\u2028\\u2066\\u2069\\uFEFF\\u{E0041}',
    );
    expect(shownText('Café 👨\u200D👩\u200D👧 <app> & "co"')).toBe('Café 👨\u200D👩\u200D👧 <app> & "co"');
  });

  it('shows a spoofing name written out on the sign-in and approval pages, never acting on them', async () => {
    for (const name of ['Visual Studio Code\nApproved by admin', 'Claude\u202Eevil']) {
      const shown = shownText(name);
      const signIn = await signInPage({ client: client(name), consentId: 'c', csrf: 'x' }).text();
      expect(signIn).toContain(`<dd id="client-name">${shown}</dd>`);
      const approve = await approvePage({ client: client(name), consentId: 'c', csrf: 'x', signedInAs: 'admin', agents: ['alice'], resource: 'http://localhost:8787/mcp' }).text();
      expect(approve).toContain(`<h1>Authorize ${shown}?</h1>`);
      expect(approve).toContain(`<dd id="client-name">${shown}</dd>`);
      for (const html of [signIn, approve]) expect(html).not.toContain(name);
    }
  });
});
