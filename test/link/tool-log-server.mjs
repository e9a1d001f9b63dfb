#!/usr/bin/env node
/**
 * Link-test fixture: the echo server that also appends the name of every `tools/call` it
 * receives to the file named by argv[2], so a test can prove a denied call never reached it.
 *
 * Usage: node test/link/tool-log-server.mjs /tmp/calls.log
 */
import { appendFileSync } from 'node:fs';
import { startEchoServer } from '../fixtures/echo-server.mjs';

const logFile = process.argv[2];
await startEchoServer({
  name: 'tool-log',
  onIncoming(message) {
    if (logFile && message.method === 'tools/call') appendFileSync(logFile, `${message.params?.name}\n`);
  },
});
