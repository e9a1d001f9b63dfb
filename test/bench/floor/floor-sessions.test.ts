import { describe, expect, it } from 'vitest';
import { FloorSessions, lineSplitter, type Upstream } from './floor-sessions.ts';

/** An upstream that records what it was sent, and whose answers the test writes. */
function recorder() {
  const opened: Array<{ session: string; written: string[]; closed: boolean; answer(line: string): void }> = [];
  const sessions = new FloorSessions((session, onLine): Upstream => {
    const entry = { session, written: [] as string[], closed: false, answer: onLine };
    opened.push(entry);
    return { write: (line) => entry.written.push(line), close: () => (entry.closed = true) };
  });
  return { sessions, opened };
}

const INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}';

describe('the floor relays\' sessions', () => {
  it('opens a session on initialize and answers with the matching line unchanged, session id attached', async () => {
    const { sessions, opened } = recorder();
    const answer = sessions.post(null, INIT);
    expect(opened).toHaveLength(1);
    expect(opened[0]!.written).toEqual([INIT]);
    opened[0]!.answer('{"jsonrpc":"2.0","method":"notifications/message","params":{}}');
    opened[0]!.answer('{"jsonrpc":"2.0","id":0,"result":{"ok":1}}');
    expect(await answer).toEqual({ status: 200, body: '{"jsonrpc":"2.0","id":0,"result":{"ok":1}}', sessionId: opened[0]!.session });
  });

  it('passes notifications on with a 202 and settles each request by its own id', async () => {
    const { sessions, opened } = recorder();
    void sessions.post(null, INIT);
    const id = opened[0]!.session;
    expect(sessions.post(id, '{"jsonrpc":"2.0","method":"notifications/initialized"}')).toEqual({ status: 202, body: '' });
    const first = sessions.post(id, '{"jsonrpc":"2.0","id":1,"method":"tools/call"}');
    const second = sessions.post(id, '{"jsonrpc":"2.0","id":2,"method":"tools/call"}');
    // A server request with a colliding id settles nothing.
    opened[0]!.answer('{"jsonrpc":"2.0","id":1,"method":"roots/list"}');
    opened[0]!.answer('{"jsonrpc":"2.0","id":2,"result":"two"}');
    opened[0]!.answer('{"jsonrpc":"2.0","id":1,"result":"one"}');
    expect(await first).toEqual({ status: 200, body: '{"jsonrpc":"2.0","id":1,"result":"one"}' });
    expect(await second).toEqual({ status: 200, body: '{"jsonrpc":"2.0","id":2,"result":"two"}' });
  });

  it('answers 404 to an unknown session, and to anything but initialize without one', () => {
    const { sessions, opened } = recorder();
    expect(sessions.post('nope', INIT)).toMatchObject({ status: 404 });
    expect(sessions.post(null, '{"jsonrpc":"2.0","id":1,"method":"tools/call"}')).toMatchObject({ status: 404 });
    expect(opened).toHaveLength(0);
  });

  it('closes the upstream on DELETE, after which the session is gone', () => {
    const { sessions, opened } = recorder();
    void sessions.post(null, INIT);
    const id = opened[0]!.session;
    expect(sessions.delete(id)).toEqual({ status: 200, body: '' });
    expect(opened[0]!.closed).toBe(true);
    expect(sessions.delete(id)).toMatchObject({ status: 404 });
  });
});

describe('splitting server output into lines', () => {
  it('joins lines cut across chunks and drops blank ones', () => {
    const lines: string[] = [];
    const split = lineSplitter((line) => lines.push(line));
    split('{"a":1}\n{"b"');
    split(':2}\n\n');
    split('{"c":3}');
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
    split('\n');
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });
});
