/**
 * What `/link` checks before any upgrade, from the request alone: the entity id header
 * (well-formed, a configured host), that `Host` names this worker (`link-origin.ts`), and the
 * host's upgrade proof (`shared/link/link-upgrade-proof.ts`): its time within
 * `UPGRADE_PROOF_WINDOW_S` of this worker's clock, its signature by that host's key for this
 * worker's origin, and its nonce not used before (`spent-upgrade-proofs.ts`). So nobody gets a
 * WebSocket without holding a configured host's key, and a runtime that buffers a whole message
 * before the worker sees it (Deno) never buffers a stranger's.
 *
 * Every refusal is HTTP 401, reason `unauthorized`, in the worker's error body (but a host whose
 * key signed more dials than its bucket of used proofs holds: 429 `limit-reached`), with the message
 * also in `X-Switchyard-Refusal` (`@hono/node-server` drops a refused upgrade's body), a `check`
 * naming which test failed, and a log line that holds neither the proof nor the signature: at most
 * one a minute per check and host, the next one counting those left out (`shared/coalesced-log.ts`). A
 * request without a proof comes from a sidecar older than this worker: it is told to update. The
 * signature is verified before the proof's time is judged, so only a proof the host's key signed
 * is ever said to show its clock wrong; refusals before that speak of "a link request naming host
 * X", never of the host.
 *
 * Used by the link route on every runtime and, on Workers, by the edge before it forwards an
 * upgrade to the host's Durable Object (whose link route checks again and remembers the nonce).
 *
 * @module
 */
import { WireError, type WireErrorDetail } from '../../shared/errors.ts';
import type { LinkLogger } from '../../shared/link/link-types.ts';
import { ENTITY_ID_HEADER, REFUSAL_CHECK_HEADER, REFUSAL_HEADER } from '../../shared/link/link-types.ts';
import { LINK_PROOF_HEADER, parseLinkProofHeader, UPGRADE_PROOF_WINDOW_S } from '../../shared/link/link-upgrade-proof.ts';
import { EntityIdSchema } from '../../shared/names.ts';
import type { HostVerifier } from './host-auth.ts';
import { CoalescedLog } from '../../shared/coalesced-log.ts';
import { createLinkOriginCheck, quote, wrongOriginMessage, type LinkOriginOptions } from './link-origin.ts';
import { SpentUpgradeProofs, type SpentProofStore } from './spent-upgrade-proofs.ts';
import { peerOf } from './peer-address.ts';

export const UNKNOWN_KEY_FIX = 'add this host to the worker config with the line `sidecar host-entry` prints on that host (switchyard host add)';
/** A known host dialling with another key: host add refuses its line without --rekey. */
export const OTHER_KEY_FIX = 'if this host made a new key, give the worker config the line `sidecar host-entry` prints on it (switchyard host add --rekey)';

/** Which test a refused upgrade failed: in the refusal's body and its log line. */
export type GateCheck = 'entity-id' | 'unknown-host' | 'origin' | 'no-proof' | 'malformed-proof' | 'clock-skew' | 'relayed' | 'bad-signature' | 'replayed' | 'too-many-dials';

/**
 * Where link requests go on the record (`WorkerAudit`): every refusal, unlike the log's lines,
 * which are coalesced per check and host; and every host whose proof verified.
 */
export interface LinkAudit {
  /**
   * @param entityId The configured host the request named (`null`: no header, one that is not an
   *   entity id, whose text stays out of the record, or a name the config does not list).
   * @param check The test it failed: a gate check, `pending-handshakes` (too many at once) or
   *   `challenge` (the in-band challenge after the upgrade).
   * @param unknownName With `unknown-host`: the entity id it named, which no config lists.
   */
  linkRefused(entityId: string | null, reason: string, check: GateCheck | 'pending-handshakes' | 'challenge', unknownName?: string): void;
  /** A host proved it holds its key: linked, or a doctor's probe verified and closed. */
  linkAccepted(entityId: string, probe: boolean): void;
}

export interface LinkUpgradeGateOptions extends LinkOriginOptions {
  verifier: HostVerifier;
  log?: LinkLogger | undefined;
  /** This worker's clock in ms; `Date.now` by default (tests skew it). */
  now?: () => number;
  /** Remember used nonces (the link route); the Workers edge forwards to the object that does. Default true. */
  remember?: boolean;
  /** Where used nonces are remembered, when `remember` is not false; a new `SpentUpgradeProofs` by default. */
  spent?: SpentProofStore | undefined;
  audit?: LinkAudit | undefined;
}

export type GateVerdict =
  | { ok: true; entityId: string; origin: { origin: string; also?: string } }
  | { ok: false; check: GateCheck; response: Response };

/** Builds the gate once per app: an upgrade request → the verified host, or the refusal to send. */
export function createLinkUpgradeGate(options: LinkUpgradeGateOptions): (request: Request) => Promise<GateVerdict> {
  const { verifier, log } = options;
  const originOf = createLinkOriginCheck(options);
  const now = options.now ?? Date.now;
  const spent = options.remember === false ? undefined : (options.spent ?? new SpentUpgradeProofs({ windowSeconds: UPGRADE_PROOF_WINDOW_S }));
  const logged = new CoalescedLog();
  return async function linkUpgradeGate(request) {
    const refuse = (entityId: string | null, check: GateCheck, message: string, detail: WireErrorDetail = {}, retryAfterS?: number): GateVerdict => {
      // Past its bucket a host's own key is refused for a while (429), every other check is 401.
      const reason = retryAfterS === undefined ? 'unauthorized' : 'limit-reached';
      // One line per check and configured host a minute, then a count: a name the dialler made up
      // is no kind of its own, so the kinds stay as few as the hosts.
      const named = check === 'entity-id' || check === 'unknown-host' ? '' : (entityId ?? '');
      const held = logged.admit(`${check}\n${named}`, now());
      if (held !== null) log?.warn('Refused a host link', { 'entity-id': entityId, reason, check, ...detail, problem: message, ...(held > 0 ? { 'unlogged-since-last': held } : {}) });
      // A name no config lists is the dialler's own: kept apart from `host`, which names configured hosts.
      options.audit?.linkRefused(check === 'entity-id' || check === 'unknown-host' ? null : entityId, reason, check, check === 'unknown-host' ? (entityId ?? undefined) : undefined);
      const body = new WireError(reason, message, { detail: { check, ...detail } }).toHttpBody();
      const headers: Record<string, string> = { 'content-type': 'application/json', [REFUSAL_HEADER]: message.replace(/[^\x20-\x7e]/g, '?').slice(0, 500), [REFUSAL_CHECK_HEADER]: check };
      if (retryAfterS !== undefined) headers['retry-after'] = String(retryAfterS);
      return { ok: false, check, response: new Response(JSON.stringify(body), { status: retryAfterS === undefined ? 401 : 429, headers }) };
    };
    const announced = request.headers.get(ENTITY_ID_HEADER) ?? undefined;
    const parsed = EntityIdSchema.safeParse(announced);
    if (!parsed.success) {
      // The header is the dialler's to write: only a bounded, printable prefix reaches the log.
      const shown = announced === undefined ? null : quote(announced);
      return refuse(shown, 'entity-id', `Send ${ENTITY_ID_HEADER}: <entity id>, the host's "entity-id": ${shown === null ? 'the header is missing' : `${shown} ${parsed.error.issues[0]?.message ?? 'is invalid'}`}`);
    }
    const entityId = parsed.data;
    if (!verifier.knows(entityId)) return refuse(entityId, 'unknown-host', `The worker does not know host "${entityId}": ${UNKNOWN_KEY_FIX}`);
    const origin = originOf(request.headers.get('host') ?? hostFromUrl(request.url), peerOf(request));
    if (!origin.ok) return refuse(entityId, 'origin', origin.message);

    const header = request.headers.get(LINK_PROOF_HEADER);
    // Until the signature verifies, nothing about the request is the host's word: refusals before
    // that speak of a request naming the host, so a stranger cannot have the worker log that a
    // host's sidecar is old or its clock wrong.
    if (header === null) {
      return refuse(entityId, 'no-proof', `A link request naming host "${entityId}" carries no ${LINK_PROOF_HEADER}: a sidecar older than this worker sends none, and this worker upgrades only a link request signed with the host key; update Switchyard on that host and restart its sidecar`);
    }
    const read = parseLinkProofHeader(header);
    if (!read.ok) return refuse(entityId, 'malformed-proof', `Malformed ${LINK_PROOF_HEADER}: ${read.problem}`);
    const proof = read.proof;
    // One verify, over the origin, time and nonce the proof names, before any of them is judged.
    if (!(await verifier.verifyUpgrade(entityId, proof))) return refuse(entityId, 'bad-signature', `The worker does not know this host's key (entity "${entityId}"): ${OTHER_KEY_FIX}`);
    const { origin: own, also } = origin;
    if (proof.origin !== own && proof.origin !== also) {
      // Signed by the host, but for the worker it dialled: a request relayed from there, or a
      // proxy that rewrote Host. Said apart, so an operator is not sent looking for a wrong key.
      return refuse(entityId, 'relayed', wrongOriginMessage(entityId, 'link request', proof.origin, own, options));
    }
    // Signed by the host's key: its time is the host's clock (or a copy of an older dial's).
    const nowMs = now();
    const skew = proof.time - Math.floor(nowMs / 1000);
    if (Math.abs(skew) > UPGRADE_PROOF_WINDOW_S) {
      return refuse(entityId, 'clock-skew', `The clock of host "${entityId}" is ${Math.abs(skew)} s ${skew < 0 ? 'behind' : 'ahead of'} the worker's (${new Date(nowMs).toISOString().replace(/\.\d+Z$/, 'Z')}; at most ${UPGRADE_PROOF_WINDOW_S} s apart): set that host's clock right (NTP) and it links again`, { 'skew-seconds': skew });
    }
    const spend = (await spent?.spend(entityId, proof.nonce, proof.time, nowMs)) ?? 'fresh';
    if (spend === 'replayed') {
      return refuse(entityId, 'replayed', `This link request of host "${entityId}" was already used: a sidecar signs a new one for each dial, so this one was copied`);
    }
    if (spend === 'full' && spent !== undefined) {
      const retryAfterS = Math.max(1, Math.ceil(((await spent.roomAt(entityId, nowMs)) - nowMs) / 1000));
      return refuse(entityId, 'too-many-dials', `Host "${entityId}" signed ${spent.maxPerHost} link requests to this worker within ${2 * UPGRADE_PROOF_WINDOW_S / 60} minutes, far more than a sidecar dials: its next ones are refused until the oldest expire (in ${retryAfterS} s); if its sidecar is not redialling in a loop, that host's key is in other hands`, { limit: 'host', max: spent.maxPerHost }, retryAfterS);
    }
    return { ok: true, entityId, origin: also === undefined ? { origin: own } : { origin: own, also } };
  };
}

/** `app.request()` in tests and some runtimes omit the header; the URL then carries the host. */
function hostFromUrl(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}
