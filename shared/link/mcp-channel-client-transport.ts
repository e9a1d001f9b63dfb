/**
 * McpChannelClientTransport (upstream M2): an MCP SDK `Transport` that is one channel carried on
 * a link. The worker's router hands it out and the upstream client of `/mcp` connects to it as is;
 * on the sidecar the same class is the agent's side of the channel a host bridges to its server.
 *
 * It adds nothing to `ChannelTransport` but the wiring to its endpoint: outbound messages become
 * `channel-message` frames (with `own: true` for an answer the host marked as its own, where the
 * worker asked: `audit/host-answers.ts`), a local close becomes a `channel-close` frame (with its
 * reason), and the endpoint feeds inbound messages and remote closes. On the sending end of a link
 * with flow control (`link-flow.ts`) it is also the channel's account there: while the link holds
 * too much of its frames, it holds back what feeds it (`throttle`), the server whose output it carries.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ChannelTransport, type ChannelCloseInfo } from '../channel-transport.ts';
import { isHostAnswer } from '../audit/host-answers.ts';
import { WireError } from '../errors.ts';
import { holdReadingOf, type FlowAccount } from './link-flow.ts';

/** What a channel needs from its endpoint; the calls are synchronous and `send` and `close` may throw `WireError`. */
export interface ChannelIo {
  /** `own`: the frame says the host wrote `message` itself (`host-answers`). */
  send(channel: McpChannelClientTransport, message: JSONRPCMessage, own: boolean): void;
  close(channel: McpChannelClientTransport, info: ChannelCloseInfo): void;
  /** Sends `message` and the channel's close as one frame; false when the peer did not ask for that or the frame did not go. */
  reply(channel: McpChannelClientTransport, message: JSONRPCMessage, own: boolean): boolean;
  /** Worker end of a paced link: why a request of `channel`'s agent may not go now (its messages wait past its budget), or null. */
  refusal(channel: McpChannelClientTransport): WireError | null;
}

export class McpChannelClientTransport extends ChannelTransport implements FlowAccount {
  readonly id: number;
  /** The message that went right behind this channel's open (`OpenChannelOptions.first`), if one did. */
  sentAhead: JSONRPCMessage | undefined = undefined;
  /** A message has arrived on it: on the host, before its open was decided, that means the open was pipelined. */
  heard = false;
  /** Host end: the worker asked on the open for the last message and the close in one frame (`open-reply`). */
  readsReply = false;
  /** Host end: the worker asked on the open for the host's own answers marked (`host-answers`, `audit/host-answers.ts`). */
  marksOwn = false;
  /** The agent it serves, by its open's `agent` ('' when none): the sender takes turns by agent (`link-sender.ts`). */
  group = '';
  /** Flow control (`link-flow.ts`): its frames not yet written out, and whether past its budget. */
  queued = 0;
  over = false;
  /**
   * Worker end of a paced link: while the link holds this channel (its frames waiting past its
   * budget), a request on it is refused with `limit-reached`, as the host refuses one past its
   * server's unread stdin: nothing on the worker can be held back but the agent, and an agent's
   * session could otherwise queue 256 requests of 4 MiB here; so is one while its agent's messages
   * to the host wait past the agent's budget (`ChannelIo.refusal`, `AGENT_QUEUE_BYTES`). Answers,
   * cancellations and notifications still go.
   */
  refusesRequestsWhenHeld = false;
  #held = false;
  /** What feeds this channel, held back while the link holds too much of it. */
  #source: object | undefined;
  #release: (() => void) | undefined;
  readonly #io: ChannelIo;

  constructor(id: number, io: ChannelIo) {
    super();
    this.id = id;
    this.#io = io;
  }

  protected async transmit(message: JSONRPCMessage): Promise<void> {
    if (this.refusesRequestsWhenHeld && 'method' in message && 'id' in message) {
      if (this.#held) throw new WireError('limit-reached', `This session's earlier messages to the host wait in the worker, more than the link takes at once: wait for their answers before sending more`, { detail: { waitingBytes: this.queued } });
      const refusal = this.#io.refusal(this);
      if (refusal !== null) throw refusal;
    }
    this.#io.send(this, message, this.marksOwn && isHostAnswer(message));
  }

  /**
   * Names what feeds this channel (a server's transport, or the instance that serves it): held
   * back (`ReadHold`) while the link holds too much of this channel's frames, at once if it does
   * now. A source that cannot be held is never held.
   */
  throttle(source: object): void {
    this.#source = source;
    if (this.#held && this.#release === undefined) this.#release = holdReadingOf(source);
  }

  /** Flow side (`LinkFlow`): holds or lets go of the source. */
  hold(on: boolean): void {
    this.#held = on;
    if (on) {
      if (this.#source !== undefined && this.#release === undefined) this.#release = holdReadingOf(this.#source);
      return;
    }
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  protected async closeRemote(info: ChannelCloseInfo): Promise<void> {
    this.#io.close(this, info);
  }

  /** One `channel-reply` frame where the worker reads it, else the message and then the close. */
  override async reply(message: JSONRPCMessage): Promise<void> {
    if (!this.closed && this.#io.reply(this, message, this.marksOwn && isHostAnswer(message))) return this.finish({});
    return super.reply(message);
  }

  /** Endpoint side: a message for this channel arrived. */
  receive(message: JSONRPCMessage): void {
    this.heard = true;
    this.deliver(message);
  }

  /** Endpoint side: the peer closed the channel, or the link is gone. */
  remoteClosed(info: ChannelCloseInfo): void {
    this.finish(info);
  }
}

/** True when `message` already went to the host with the open of `transport` (a link channel's `sentAhead`). */
export function wasSentAhead(transport: Transport, message: JSONRPCMessage): boolean {
  return transport instanceof McpChannelClientTransport && transport.sentAhead === message;
}
