import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { frameSchema, LINK_PROTOCOL_VERSION, MAX_FRAME_BYTES } from '../frames.ts';
import { readFrame } from './frame-reader.ts';

/** `channel-message` frames, mostly well formed, now and then with one key wrong, missing or added. */
const wellFormed = fc.record({
  v: fc.constant(LINK_PROTOCOL_VERSION),
  type: fc.constant('channel-message'),
  channel: fc.integer({ min: 1, max: 2 ** 31 }),
  message: fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), result: fc.object() }),
});
const wrong = fc.record({
  key: fc.constantFrom('v', 'channel', 'message', 'extra', 'own'),
  value: fc.oneof(fc.constantFrom(0, -1, 1.5, 2 ** 31 + 1, 2, null, undefined, true, false), fc.array(fc.integer()), fc.string(), fc.object()),
});
const channelMessage = fc
  .tuple(wellFormed, fc.option(wrong, { freq: 2 }))
  .map(([frame, change]) => (change === null ? frame : { ...frame, [change.key]: change.value }));

/** Frames other than channel-message read as `{ kind: 'frame' }` with the schema's output, keys in its order, or as malformed where it refuses them. */
function readsAsTheSchemaDoes(frames: fc.Arbitrary<Record<string, unknown>>): void {
  let accepted = 0;
  fc.assert(
    fc.property(frames, (generated) => {
      const text = JSON.stringify(generated);
      const read = readFrame(text, MAX_FRAME_BYTES);
      const expected = frameSchema().safeParse(JSON.parse(text));
      if (expected.success) {
        accepted++;
        expect(read).toEqual({ kind: 'frame', frame: expected.data });
        expect(Object.keys((read as { frame: object }).frame)).toEqual(Object.keys(expected.data));
      } else expect(read.kind).toBe('malformed');
    }),
    { numRuns: 2000 },
  );
  expect(accepted).toBeGreaterThan(50);
}

describe('readFrame', () => {
  it('reads channel-message frames exactly as the frame schema does', () => {
    let accepted = 0;
    fc.assert(
      fc.property(channelMessage, (generated) => {
        const text = JSON.stringify(generated);
        const frame = JSON.parse(text) as Record<string, unknown>;
        const read = readFrame(text, MAX_FRAME_BYTES);
        if (frame.v !== LINK_PROTOCOL_VERSION) return void expect(read.kind).toBe('wrong-version');
        const expected = frameSchema().safeParse(frame);
        if (expected.success && expected.data.type === 'channel-message') {
          accepted++;
          const { channel, message, own } = expected.data;
          expect(read).toStrictEqual(own === true ? { kind: 'message', channel, message, own } : { kind: 'message', channel, message });
        } else expect(read.kind).toBe('malformed');
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(50);
  });

  it('reads channel-open-ack and channel-close frames exactly as the frame schema does', () => {
    const bare = fc.record({ v: fc.constant(LINK_PROTOCOL_VERSION), type: fc.constantFrom('channel-open-ack', 'channel-close'), channel: fc.integer({ min: 1, max: 2 ** 31 }) });
    const change = fc.record({
      key: fc.constantFrom('channel', 'reason', 'message', 'extra'),
      value: fc.oneof(fc.constantFrom(0, -1, 1.5, 2 ** 31 + 1, 2, null, undefined, 'server-exited', 'text'), fc.string(), fc.object()),
    });
    readsAsTheSchemaDoes(fc.tuple(bare, fc.option(change, { freq: 2 })).map(([frame, c]) => (c === null ? frame : { ...frame, [c.key]: c.value })));
  });

  it('reads channel-open frames exactly as the frame schema does', () => {
    const open = fc.record({
      v: fc.constant(LINK_PROTOCOL_VERSION),
      type: fc.constant('channel-open'),
      channel: fc.integer({ min: 1, max: 2 ** 31 }),
      request: fc.oneof(fc.record({ type: fc.constant('mcp'), connection: fc.object() }), fc.jsonValue()),
    });
    // `first` (open-first): a JSON-RPC message object, or something the schema refuses there.
    const change = fc.record({
      key: fc.constantFrom('channel', 'request', 'extra', 'first', 'first'),
      value: fc.oneof(fc.constantFrom(0, -1, 1.5, 2 ** 31 + 1, 2, null, undefined, 'text'), fc.string(), fc.object(), fc.array(fc.integer()), fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.string() })),
    });
    // `reply` and `own` (host-answers): true, or something the schema refuses there.
    const flag = fc.option(fc.constantFrom(true, true, false, 1, 'true', null), { freq: 2 });
    readsAsTheSchemaDoes(fc.tuple(open, fc.option(change, { freq: 2 }), flag, flag).map(([frame, c, reply, own]) => {
      const changed: Record<string, unknown> = c === null ? { ...frame } : { ...frame, [c.key]: c.value };
      if (reply !== null) changed.reply = reply;
      if (own !== null) changed.own = own;
      return changed;
    }));
  });

  it('words what is wrong with a channel-message the hand check refuses', () => {
    const read = readFrame(JSON.stringify({ v: LINK_PROTOCOL_VERSION, type: 'channel-message', channel: 0, message: {} }), MAX_FRAME_BYTES);
    expect(read).toEqual({ kind: 'malformed', problem: expect.stringMatching(/^channel: /) });
    const stray = readFrame(JSON.stringify({ v: LINK_PROTOCOL_VERSION, type: 'channel-message', channel: 1, message: {}, extra: 1 }), MAX_FRAME_BYTES);
    expect(stray.kind).toBe('malformed');
  });

  it('names a version it cannot print by its type, even one whose toString is not callable', () => {
    expect(readFrame('{"v":{"toString":0},"type":"channel-message"}', MAX_FRAME_BYTES)).toEqual({ kind: 'wrong-version', version: 'object' });
    expect(readFrame('{"v":"99","type":"hello"}', MAX_FRAME_BYTES)).toEqual({ kind: 'wrong-version', version: '99' });
  });
});
