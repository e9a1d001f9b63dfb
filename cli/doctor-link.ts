/**
 * The doctor's link check: the real link handshake against the worker, as the sidecar runs it
 * (`sidecar/link/link-client.ts`: the same URL, entity-id header, signed upgrade proof, challenge and signed proof), but
 * once, and closed the moment the worker answers. It says it is a probe, so the worker registers
 * nothing: a sidecar running on this host keeps its link. No channel is ever opened on it.
 *
 * The worker names what is wrong and what to do (an unknown entity id or key, a relayed
 * challenge, this machine's clock off from the worker's), in its refusal; that text is passed on
 * as it is. Accepted, it says what it expects
 * of this host (servers and pinned revisions), which `doctor-expectations.ts` compares.
 *
 * @module
 */
import WebSocket from 'ws';
import { CallbackFrameSocket } from '../shared/link/frame-socket.ts';
import type { HostExpectations } from '../shared/link/host-expectations.ts';
import { answerChallenge } from '../shared/link/link-handshake.ts';
import { originOfUrl } from '../shared/link/link-identity.ts';
import { createLinkProofHeader, LINK_PROOF_HEADER } from '../shared/link/link-upgrade-proof.ts';
import { ENTITY_ID_HEADER, LINK_PROBE_HEADER, REFUSAL_HEADER } from '../shared/link/link-types.ts';
import { WireError } from '../shared/errors.ts';
import type { HostKey } from '../sidecar/link/host-key.ts';
import { linkUrl } from '../sidecar/link/link-client.ts';

export type LinkProbe =
  /** `expects`: what the worker expects of this host; absent when the worker does not say. */
  | { readonly ok: true; readonly url: string; readonly expects?: HostExpectations }
  /** `unreachable`: no WebSocket to the worker; `refused`: the worker answered and said no. */
  | { readonly ok: false; readonly url: string; readonly problem: 'unreachable' | 'refused'; readonly message: string };

function refusalOf(body: string, header: string | undefined, status: number): string {
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') return message;
  } catch {
    // not the worker's JSON error: a proxy's page, say
  }
  return header ?? `the worker answered HTTP ${status} instead of a WebSocket upgrade`;
}

/**
 * @param options The worker base URL (sidecar.json "worker"), this host's entity id and key.
 * @returns Whether the worker accepted this host's proof, or why not.
 */
export async function probeLink(options: { worker: string; entityId: string; key: HostKey; timeoutMs?: number }): Promise<LinkProbe> {
  const url = linkUrl(options.worker);
  const origin = originOfUrl(url);
  const timeoutMs = options.timeoutMs ?? 10_000;
  let proof: string;
  try {
    proof = await createLinkProofHeader((fields) => options.key.sign(fields), { origin, entityId: options.entityId });
  } catch (error) {
    return { ok: false, url, problem: 'refused', message: `this host could not sign its link request: ${error instanceof Error ? error.message : String(error)}` };
  }
  return new Promise((resolve) => {
    let done = false;
    const finish = (result: LinkProbe) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      resolve(result);
      ws.terminate();
    };
    const ws = new WebSocket(url, { headers: { [ENTITY_ID_HEADER]: options.entityId, [LINK_PROOF_HEADER]: proof, [LINK_PROBE_HEADER]: '1' }, perMessageDeflate: false, handshakeTimeout: timeoutMs });
    // One bound for it all: ws's handshake timeout restarts with every byte, so an answer that
    // keeps trickling (a proxy's event stream) held doctor for ever (review s22).
    const deadline = setTimeout(() => finish({ ok: false, url, problem: 'unreachable', message: `the worker did not finish the link handshake within ${2 * timeoutMs} ms` }), 2 * timeoutMs);
    ws.on('unexpected-response', (_request, response) => {
      let body = '';
      const header = response.headers[REFUSAL_HEADER.toLowerCase()];
      const settle = () => finish({ ok: false, url, problem: 'refused', message: refusalOf(body, typeof header === 'string' ? header : undefined, response.statusCode ?? 0) });
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
        // The worker's refusal is short: past 4 KiB this is something else, read no further.
        if (body.length >= 4096) {
          settle();
          response.destroy();
        }
      });
      response.once('end', settle);
      response.once('close', settle);
    });
    ws.on('error', (error) => finish({ ok: false, url, problem: 'unreachable', message: error.message || (error as { code?: string }).code || 'connection failed' }));
    let opened = false;
    ws.on('close', (code) => {
      const closed = () => finish({ ok: false, url, problem: 'unreachable', message: `the connection closed (code ${code}) before the handshake ended` });
      // Once open, the handshake's own verdict (the worker's link-close) settles first.
      if (opened) setImmediate(closed);
      else closed();
    });
    ws.on('open', () => {
      opened = true;
      const socket = new CallbackFrameSocket({ send: (text) => ws.send(text), close: (code, reason) => ws.close(code, reason), abort: () => ws.terminate() });
      ws.on('message', (data) => socket.receive(data.toString()));
      ws.on('close', (code, reason) => socket.ended({ code, reason: reason.toString() }));
      let expects: HostExpectations | undefined;
      answerChallenge(socket, {
        prove: async (nonce) => ({ origin, signature: await options.key.sign({ origin, entityId: options.entityId, nonce }) }),
        onExpects: (told) => (expects = told),
        accept: () => true,
        timeoutMs,
      }).then(
        () => finish({ ok: true, url, ...(expects !== undefined ? { expects } : {}) }),
        (error: unknown) => finish({ ok: false, url, problem: 'refused', message: error instanceof WireError ? error.message : String(error) }),
      );
    });
  });
}
