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
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { httpStatusFor, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { wasSentAhead } from '../../shared/link/mcp-channel-client-transport.ts';
import { statusForUpstreamError } from './modern-errors.ts';
import { SSE_HEADERS, sseEvent } from './modern-relay.ts';
import type { ModernRequest } from './validate-request.ts';

/** How often a quiet listen stream gets a keep-alive comment. */
export const KEEP_ALIVE_MS = 15_000;

const KEEP_ALIVE = new TextEncoder().encode(':\n\n');

export interface ListenRelayOptions {
  signal?: AbortSignal;
  keepAliveMs?: number;
}

export function relayListen(channel: Transport, request: ModernRequest, options: ListenRelayOptions = {}): Promise<Response> {
  return new Promise<Response>((resolve) => {
    let stream: ReadableStreamDefaultController<Uint8Array> | undefined;
    let done = false;
    let failure: WireError | undefined;
    let keepAlive: ReturnType<typeof setInterval> | undefined;

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
      else closeQuietly(open);
    };
    const open = () => {
      const body = new ReadableStream<Uint8Array>({
        start: (controller) => {
          stream = controller;
        },
        cancel: finish,
      });
      resolve(new Response(body, { status: 200, headers: SSE_HEADERS }));
      keepAlive = setInterval(() => {
        if (!done) enqueue(KEEP_ALIVE);
      }, options.keepAliveMs ?? KEEP_ALIVE_MS);
    };
    const enqueue = (bytes: Uint8Array) => {
      try {
        stream!.enqueue(bytes);
      } catch {
        finish(); // the agent's side of the stream is gone
      }
    };
    const end = (message: unknown, status: number) => {
      if (done) return;
      if (stream === undefined) resolve(Response.json(message, { status }));
      else {
        enqueue(sseEvent(message));
        closeQuietly(stream);
      }
      finish();
    };

    channel.onmessage = (message) => {
      if (done) return;
      const { id, method } = message as { id?: unknown; method?: unknown };
      if (method === undefined && id === request.id) {
        const error = (message as { error?: { code?: unknown } }).error;
        end(message, error === undefined ? 200 : error.code === -32602 ? 400 : statusForUpstreamError(error.code));
      } else if (typeof method === 'string' && id === undefined) {
        if (stream === undefined) open();
        enqueue(sseEvent(message as JSONRPCMessage));
      }
    };
    channel.onerror = (error) => {
      if (error instanceof WireError) failure = error;
    };
    channel.onclose = () => {
      if (stream !== undefined) {
        closeQuietly(stream);
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

function closeQuietly(stream: ReadableStreamDefaultController<Uint8Array>): void {
  try {
    stream.close();
  } catch {
    // already closed or cancelled
  }
}
