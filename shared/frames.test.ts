import { describe, expect, it } from 'vitest';
import { LINK_PROTOCOL_VERSION, MAX_FRAME_BYTES, type Frame } from './frames.ts';
import { exceeds, readFrame } from './link/frame-reader.ts';

/** What the live reader makes of a frame, back as the frame it read. */
function reread(text: string): Frame {
  const read = readFrame(text, MAX_FRAME_BYTES);
  const own = read.kind === 'message' || read.kind === 'reply' ? (read.own === true ? { own: true as const } : {}) : {};
  if (read.kind === 'message') return { v: LINK_PROTOCOL_VERSION, type: 'channel-message', channel: read.channel, message: read.message, ...own };
  if (read.kind === 'reply') return { v: LINK_PROTOCOL_VERSION, type: 'channel-reply', channel: read.channel, message: read.message, ...own };
  if (read.kind === 'frame') return read.frame;
  throw new Error(`not read as a frame: ${JSON.stringify(read)}`);
}

describe('link frames', () => {
  it('round-trips every frame type through the live reader', () => {
    const frames: Frame[] = [
      { v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp', connection: { 'server-name': 'x' } } },
      { v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp' }, first: { jsonrpc: '2.0', id: 1, method: 'ping' }, reply: true },
      { v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp' }, first: { jsonrpc: '2.0', id: 1, method: 'ping' }, reply: true, own: true },
      { v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp' }, own: true },
      { v: 1, type: 'channel-open-ack', channel: 1 },
      { v: 1, type: 'channel-reply', channel: 1, message: { jsonrpc: '2.0', id: 1, result: {} } },
      { v: 1, type: 'channel-reply', channel: 1, message: { jsonrpc: '2.0', id: 1, error: { code: -32010, message: 'Denied' } }, own: true },
      { v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', id: 1, error: { code: -32010, message: 'Denied' } }, own: true },
      { v: 1, type: 'channel-open-error', channel: 1, reason: 'trust-profile-stale', message: 'Profile changed' },
      { v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', id: 1, method: 'ping' } },
      { v: 1, type: 'channel-close', channel: 1, reason: 'server-exited', message: 'exit 3' },
      { v: 1, type: 'keepalive', id: 7 },
      { v: 1, type: 'keepalive-reply', id: 7 },
      { v: 1, type: 'link-close', reason: 'host-offline', message: 'Replaced by a newer link' },
      { v: 1, type: 'link-challenge', nonce: 'A'.repeat(43) },
      { v: 1, type: 'link-proof', origin: '127.0.0.1:8787', signature: 'b'.repeat(86) },
      { v: 1, type: 'link-accepted' },
    ];
    for (const frame of frames) expect(reread(JSON.stringify(frame))).toEqual(frame);
  });

  it('refuses another protocol version, unknown reasons and unknown keys', () => {
    expect(readFrame(JSON.stringify({ v: LINK_PROTOCOL_VERSION + 1, type: 'keepalive', id: 1 }), MAX_FRAME_BYTES)).toEqual({ kind: 'wrong-version', version: '2' });
    expect(readFrame('{"v":1,"type":"channel-close","channel":1,"reason":"because"}', MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^reason: /) });
    expect(readFrame('{"v":1,"type":"keepalive","id":1,"extra":true}', MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringContaining('"extra"') });
    expect(readFrame('not json', MAX_FRAME_BYTES)).toEqual({ kind: 'malformed', problem: 'not valid JSON' });
    // `reply` only as true, and a reply's message only as an object.
    expect(readFrame('{"v":1,"type":"channel-open","channel":1,"request":{},"first":{},"reply":false}', MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^reply: /) });
    expect(readFrame('{"v":1,"type":"channel-reply","channel":1,"message":[]}', MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^message: /) });
    // `own` (host-answers) only as true, on an open or a message from the host.
    for (const type of ['channel-message', 'channel-reply']) {
      expect(readFrame(`{"v":1,"type":"${type}","channel":1,"message":{},"own":false}`, MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^own: /) });
      expect(readFrame(`{"v":1,"type":"${type}","channel":1,"message":{},"own":1}`, MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^own: /) });
    }
    expect(readFrame('{"v":1,"type":"channel-open","channel":1,"request":{},"own":"yes"}', MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^own: /) });
    // Nowhere else: the frames a host's answer never travels in.
    expect(readFrame('{"v":1,"type":"channel-open-error","channel":1,"reason":"denied-by-policy","message":"x","own":true}', MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed' });
    expect(readFrame('{"v":1,"type":"channel-close","channel":1,"own":true}', MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed' });
  });

  it('refuses a short nonce, a signature of the wrong size and an origin with a line break', () => {
    expect(readFrame(JSON.stringify({ v: 1, type: 'link-challenge', nonce: 'A'.repeat(42) }), MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^nonce: must be 32 bytes/) });
    expect(readFrame(JSON.stringify({ v: 1, type: 'link-proof', origin: 'h', signature: 'b'.repeat(85) }), MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^signature: /) });
    expect(readFrame(JSON.stringify({ v: 1, type: 'link-proof', origin: 'h\nentity-id=x', signature: 'b'.repeat(86) }), MAX_FRAME_BYTES)).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/^origin: /) });
  });

  it('never truncates: a frame over the limit is too large, counted in UTF-8 bytes both ways', () => {
    const big = 'x'.repeat(MAX_FRAME_BYTES);
    const frame: Frame = { v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', method: 'n', params: { big } } };
    expect(exceeds(JSON.stringify(frame), MAX_FRAME_BYTES)).toBe(true);
    expect(readFrame(JSON.stringify(frame), MAX_FRAME_BYTES)).toEqual({ kind: 'too-large' });
    // Fewer characters than the limit, more bytes: "é" is two bytes in UTF-8.
    const wide = JSON.stringify({ ...frame, message: { jsonrpc: '2.0', method: 'n', params: { big: 'é'.repeat(MAX_FRAME_BYTES / 2) } } });
    expect(wide.length).toBeLessThan(MAX_FRAME_BYTES);
    expect(exceeds(wide, MAX_FRAME_BYTES)).toBe(true);
    expect(readFrame(wide, MAX_FRAME_BYTES)).toEqual({ kind: 'too-large' });
  });
});
