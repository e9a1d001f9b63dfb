import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenFailureMessage, listenFailureOf } from './listen-failure.ts';

/** A Deno error as `deno.serve` throws it: the class name is the failure, the message is the OS's. */
function denoError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** The error Node's own listen gives on `port` of `host`. */
function nodeListenError(host: string, port: number): Promise<unknown> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', resolve);
    server.listen(port, host, () => server.close(() => resolve(null)));
  });
}

describe('listenFailureOf', () => {
  it("reads Deno's error class names", () => {
    expect(listenFailureOf(denoError('AddrInUse', 'Address already in use (os error 98)'))).toBe('in-use');
    expect(listenFailureOf(denoError('AddrNotAvailable', 'Cannot assign requested address (os error 99)'))).toBe('not-local');
    expect(listenFailureOf(denoError('PermissionDenied', 'Permission denied (os error 13)'))).toBe('not-permitted');
    expect(listenFailureOf(denoError('TypeError', 'Address already in use'))).toBe('other');
  });

  it("reads the codes of Node's real listen errors, not their messages", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      expect(listenFailureOf(await nodeListenError('127.0.0.1', port))).toBe('in-use');
    } finally {
      holder.close();
    }
    // TEST-NET-1 (RFC 5737): never an address of this machine.
    expect(listenFailureOf(await nodeListenError('192.0.2.1', 0))).toBe('not-local');
    expect(listenFailureOf(null)).toBe('other');
  });
});

describe('listenFailureMessage', () => {
  it('names the address and what to do', () => {
    expect(listenFailureMessage('127.0.0.1', 8787, denoError('AddrInUse', 'x'))).toBe(
      'Cannot listen on 127.0.0.1:8787: the port is already in use: stop what holds it, or choose another port (0 picks a free one)',
    );
    expect(listenFailureMessage('::1', 8787, denoError('AddrNotAvailable', 'x'))).toBe('Cannot listen on [::1]:8787: no network interface of this machine has that address');
    expect(listenFailureMessage('0.0.0.0', 80, { code: 'EACCES' })).toBe('Cannot listen on 0.0.0.0:80: not permitted (a port below 1024 needs privileges)');
    expect(listenFailureMessage('127.0.0.1', 1, new Error('Something else'))).toBe('Cannot listen on 127.0.0.1:1: Something else');
  });
});
