/**
 * Relays one `subscriptions/listen` request over its own channel as the agent's listen stream
 * (basic/patterns/subscriptions.mdx): an SSE response that opens with the host's acknowledgement
 * and stays open, each change notification one event, until the agent closes it (which closes the
 * channel, and the host ends the subscription upstream), the host ends it (its closing result is
 * the last event), or the channel fails (the stream just ends: an abrupt end, as the spec says).
 *
 * Nothing of the subscription is kept here beyond the open stream and its channel (DESIGN §8):
 * the host holds the subscription, so the agent's other requests, through any worker instance,
 * trigger what this stream carries. No deadline applies: a listen stream is long-lived; an SSE
 * comment line every 15 s keeps intermediaries from closing it while quiet.
 *
 * An error answered before the acknowledgement (a bad filter, a refused open) is plain JSON.
 *
 * Bounded as a request's stream is (`modern-relay.ts`): a stream holding more than
 * `maxUnreadBytes` unread behind the event being sent when the next notification comes is ended with a `limit-reached` error
 * for the listen request as its last event, the events not yet started dropped, and its channel
 * closed (the host ends the subscription), so a change storm nobody reads costs the worker at most
 * that bound. So is one the agent is not reading while past the hard bound on what it leaves unread
 * (`meter`, `hardUnreadLimit`).
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { httpStatusFor, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { wasSentAhead } from '../../shared/link/mcp-channel-client-transport.ts';
import { AnswerStream, hardUnreadLimit, MAX_UNREAD_BYTES_PER_STREAM, pastHardUnread, type UnreadMeter } from '../sessions/answer-stream.ts';
import { statusForUpstreamError } from './modern-errors.ts';
import { reportUnread, SSE_HEADERS, sseEvent, type RelayOptions, type UnreadEnd } from './modern-relay.ts';
import type { ModernRequest } from './validate-request.ts';

/** How often a quiet listen stream gets a keep-alive comment. */
export const KEEP_ALIVE_MS = 15_000;

const KEEP_ALIVE = new TextEncoder().encode(':\n\n');

export interface ListenRelayOptions {
  signal?: AbortSignal;
  keepAliveMs?: number;
  /** Unread bytes the stream may hold before it is ended; `MAX_UNREAD_BYTES_PER_STREAM` by default. */
  maxUnreadBytes?: number;
  /** The agent's unread budget, which the stream's unread bytes count against. */
  meter?: UnreadMeter;
  /** Told when the stream was ended for what the agent left unread. */
  onUnread?: (unread: UnreadEnd) => void;
  /** Where that is logged, with the meter's agent, `server` and the method (`reportUnread`). */
  log?: RelayOptions['log'];
  server?: string;
}

export function relayListen(channel: Transport, request: ModernRequest, options: ListenRelayOptions = {}): Promise<Response> {
  return new Promise<Response>((resolve) => {
    let stream: AnswerStream | undefined;
    let done = false;
    let failure: WireError | undefined;
    let keepAlive: ReturnType<typeof setInterval> | undefined;
    const maxUnread = options.maxUnreadBytes ?? MAX_UNREAD_BYTES_PER_STREAM;

    const finish = () => {
      if (done) return;
      done = true;
      if (keepAlive !== undefined) clearInterval(keepAlive);
      options.signal?.removeEventListener('abort', abandoned);
      void channel.close().catch(() => {});
    };
    const abandoned = () => {
      const open = stream;
      finish();
      if (open === undefined) resolve(new Response(null, { status: 499 }));
      else open.end();
    };
    const open = () => {
      const opened = new AnswerStream({ meter: options.meter, oncancel: finish });
      stream = opened;
      resolve(new Response(opened.body, { status: 200, headers: SSE_HEADERS }));
      keepAlive = setInterval(() => {
        if (!done) enqueue(opened, KEEP_ALIVE);
      }, options.keepAliveMs ?? KEEP_ALIVE_MS);
      return opened;
    };
    const enqueue = (open: AnswerStream, bytes: Uint8Array) => {
      if (!open.push(bytes)) finish(); // the agent's side of the stream is gone
    };
    const end = (message: unknown, status: number) => {
      if (done) return;
      if (stream === undefined) resolve(Response.json(message, { status }));
      else {
        enqueue(stream, sseEvent(message));
        stream.end();
      }
      finish();
    };
    // The agent stopped reading: what it has not started is dropped, the error is its last event.
    const leftUnread = (open: AnswerStream) => {
      const meter = options.meter;
      const own = open.queuedBehind > maxUnread;
      const limit = own ? maxUnread : hardUnreadLimit(meter!);
      const why = own ? `more than ${limit} bytes of it were left unread` : `agent "${meter!.agent}" holds more than ${limit} bytes of answers unread`;
      const error = new WireError('limit-reached', `Listen stream ended: ${why}`, { detail: { limit } });
      reportUnread(options, request.method, { ended: 'stream', unreadBytes: own ? open.queuedBehind : meter!.unreadBytes, limit });
      open.cut(error, sseEvent(jsonRpcErrorBody(request.id, error)));
      finish();
    };

    channel.onmessage = (message) => {
      if (done) return;
      const { id, method } = message as { id?: unknown; method?: unknown };
      if (method === undefined && id === request.id) {
        const error = (message as { error?: { code?: unknown } }).error;
        end(message, error === undefined ? 200 : error.code === -32602 ? 400 : statusForUpstreamError(error.code));
      } else if (typeof method === 'string' && id === undefined) {
        const current = stream ?? open();
        const meter = options.meter;
        if (current.queuedBehind > maxUnread || (pastHardUnread(meter) && !current.reading)) leftUnread(current);
        else enqueue(current, sseEvent(message as JSONRPCMessage));
      }
    };
    channel.onerror = (error) => {
      if (error instanceof WireError) failure = error;
    };
    channel.onclose = () => {
      if (stream !== undefined) {
        stream.end();
        finish();
        return;
      }
      const error = failure ?? new WireError('server-exited', "The server's channel closed before it acknowledged subscriptions/listen");
      end(jsonRpcErrorBody(request.id, error), httpStatusFor(error.reason));
    };

    if (options.signal?.aborted) return abandoned();
    options.signal?.addEventListener('abort', abandoned, { once: true });
    // A request that went right behind the channel's open (`forwardModern`) is not sent twice.
    void channel.start().then(
      () => (wasSentAhead(channel, request as JSONRPCMessage) ? undefined : channel.send(request as JSONRPCMessage)),
    ).catch((error: unknown) => {
      const wire = error instanceof WireError ? error : new WireError('server-exited', 'Could not send subscriptions/listen to the server');
      end(jsonRpcErrorBody(request.id, wire), httpStatusFor(wire.reason));
    });
  });
}
