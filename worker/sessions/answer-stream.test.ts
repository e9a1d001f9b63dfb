/** What an answer stream counts as unread, and how it ends: the bound of every agent-facing answer body. */
import { describe, expect, it } from 'vitest';
import { ANSWER_CHUNK_BYTES, AnswerStream } from './answer-stream.ts';

const bytes = (n: number, fill = 120) => new Uint8Array(n).fill(fill);

describe('AnswerStream', () => {
  it('counts what is queued and not taken, on itself and on the agent meter, and hands a large event over in chunks', async () => {
    const meter = { agent: 'alice', unreadBytes: 0, maxUnreadBytes: 1 << 30 };
    let drained = 0;
    const answer = new AnswerStream({ meter, ondrained: () => drained++ });
    answer.push(bytes(100));
    answer.push(bytes(ANSWER_CHUNK_BYTES * 2 + 10));
    expect([answer.unread, meter.unreadBytes]).toEqual([ANSWER_CHUNK_BYTES * 2 + 110, ANSWER_CHUNK_BYTES * 2 + 110]);
    const reader = answer.body.getReader();
    const sizes: number[] = [];
    for (let i = 0; i < 4; i++) sizes.push((await reader.read()).value!.byteLength);
    expect(sizes).toEqual([100, ANSWER_CHUNK_BYTES, ANSWER_CHUNK_BYTES, 10]);
    expect([answer.unread, meter.unreadBytes, drained]).toEqual([0, 0, 1]);
    // A reader waiting for more gets a small event straight away: never counted.
    const next = reader.read();
    await new Promise((resolve) => setImmediate(resolve)); // its pull runs
    answer.push(bytes(5));
    expect(answer.unread).toBe(0);
    expect((await next).value!.byteLength).toBe(5);
    answer.end();
    expect((await reader.read()).done).toBe(true);
  });

  it('counts as queued behind only what waits after the event at the head, taken in pieces or not yet', async () => {
    const answer = new AnswerStream();
    answer.push(bytes(ANSWER_CHUNK_BYTES * 3));
    answer.push(bytes(10));
    expect([answer.unread, answer.queuedBehind]).toEqual([ANSWER_CHUNK_BYTES * 3 + 10, 10]);
    const reader = answer.body.getReader();
    await reader.read();
    expect([answer.unread, answer.queuedBehind]).toEqual([ANSWER_CHUNK_BYTES * 2 + 10, 10]);
    await reader.read();
    await reader.read();
    expect([answer.unread, answer.queuedBehind]).toEqual([10, 0]);
    await reader.cancel();
  });

  it('ends only once what it holds was taken', async () => {
    let drained = 0;
    const answer = new AnswerStream({ ondrained: () => drained++ });
    answer.push(bytes(10));
    answer.end();
    expect(answer.push(bytes(1))).toBe(false);
    const reader = answer.body.getReader();
    expect((await reader.read()).value!.byteLength).toBe(10);
    expect(drained).toBe(1);
    expect((await reader.read()).done).toBe(true);
  });

  it('cut with a last event: drops the events not started, finishes the one being taken, then the last one, then ends', async () => {
    const meter = { agent: 'alice', unreadBytes: 0, maxUnreadBytes: 1 << 30 };
    const answer = new AnswerStream({ meter });
    answer.push(bytes(ANSWER_CHUNK_BYTES + 7, 97));
    answer.push(bytes(50, 98));
    answer.push(bytes(60, 99));
    const reader = answer.body.getReader();
    expect((await reader.read()).value!.byteLength).toBe(ANSWER_CHUNK_BYTES);
    answer.cut(new Error('left unread'), bytes(3, 100));
    expect([answer.unread, meter.unreadBytes]).toEqual([10, 10]);
    expect(answer.open).toBe(false);
    const rest: number[][] = [];
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest.push([...new Set(chunk.value)]);
    expect(rest).toEqual([[97], [100]]);
    expect(meter.unreadBytes).toBe(0);
  });

  it('cut without a last event errors the stream and drops its queue at once', async () => {
    const meter = { agent: 'alice', unreadBytes: 0, maxUnreadBytes: 1 << 30 };
    const answer = new AnswerStream({ meter });
    answer.push(bytes(1000));
    answer.cut(new Error('the agent left more than 10 bytes unread'));
    expect([answer.unread, meter.unreadBytes]).toEqual([0, 0]);
    await expect(answer.body.getReader().read()).rejects.toThrow('unread');
  });

  it('gives back what it held when the agent goes away, and is told', async () => {
    const meter = { agent: 'alice', unreadBytes: 0, maxUnreadBytes: 1 << 30 };
    let cancelled = 0;
    const answer = new AnswerStream({ meter, oncancel: () => cancelled++ });
    answer.push(bytes(1000));
    await answer.body.cancel();
    expect([answer.unread, meter.unreadBytes, cancelled]).toEqual([0, 0, 1]);
    expect(answer.push(bytes(1))).toBe(false);
  });
});
