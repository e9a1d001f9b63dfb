/**
 * Issue 13, finding 4: `internet-client` (and a profile that grants paths but says nothing of the
 * network) shared the host's network namespace, and with it every loopback service of the host and
 * the abstract Unix-socket namespace (X11, D-Bus, systemd). Now every contained sandbox has its
 * own network namespace; `internet-client` goes out through slirp4netns with the host's loopback
 * refused.
 *
 * The "internet" is a test host this file creates: a network namespace joined to this machine by
 * a veth pair, with an HTTP server on a TEST-NET-3 address inside it (a /30 of 203.0.113.0/24 of
 * its own, away from this machine's 192.0.2.0/24, whose routes it must never touch). Everything
 * runs through the real compiler and the real ProcessExecutor with real bubblewrap and slirp4netns.
 *
 * Creating network namespaces and veth pairs needs root (CAP_NET_ADMIN on the host); as another
 * user the whole file is skipped, with that reason in its title.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { createLogger } from '../../sidecar/log.ts';
import { bubblewrapProbe, compileContainment } from '../../sidecar/sandbox/index.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE, type NetworkCapability } from '../../sidecar/trust/effective-profile.ts';
import { Figures } from '../resilience/figures.ts';

const IS_ROOT = process.getuid?.() === 0;
const HTTP_PORT = 8080;
const tag = randomBytes(3).toString('hex');
const NETNS = `sy-test-${tag}`;
const VETH_HOST = `syh${tag}`;
const VETH_NS = `syn${tag}`;
// A /30 of TEST-NET-3 from .64 up, clear of the .1/.2 other tests may hold on the /24.
const base = 4 * randomInt(16, 63);
const HOST_ADDRESS = `203.0.113.${base + 1}`;
const TEST_HOST = `203.0.113.${base + 2}`;
const ABSTRACT_NAME = `switchyard-test-${tag}`;
const ABSTRACT = `\0${ABSTRACT_NAME}`;

// Warnings to stderr: a failed sandbox setup then shows bwrap's and slirp4netns's own words.
const executor = new ProcessExecutor({ termGraceMs: 300, logger: createLogger({ level: 'warn' }) });
/** Counted with the resilience suite's totals: each contained launch a session, each reach tried an input. */
const figures = new Figures('sandbox-network');
let root: string;
let granted: string;
let testHost: ChildProcess | undefined;
let loopbackService: Server;
let loopbackPort: number;
let abstractService: Server;
let netnsCreated = false;

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Tries each target from inside a sandbox under `network`; returns what happened to each. */
const PROBE = `
const net = require('node:net');
const http = require('node:http');
const fs = require('node:fs');
const [testHost, loopbackPort, abstractName] = process.argv.slice(1);
const abstractPath = '\\0' + abstractName;
const timeout = (p) => Promise.race([p, new Promise((r) => setTimeout(() => r('timeout'), 3000).unref())]);
const tcp = (host, port) => timeout(new Promise((resolve) => {
  const s = net.connect(Number(port), host);
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('data', () => {});
  s.on('error', (e) => resolve(e.code));
}));
const abstract = () => timeout(new Promise((resolve) => {
  const s = net.connect({ path: abstractPath });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code));
}));
const get = (url) => timeout(new Promise((resolve) => {
  http.get(url, (res) => { let body = ''; res.on('data', (d) => (body += d)); res.on('end', () => resolve('http ' + res.statusCode + ' ' + body.trim())); })
    .on('error', (e) => resolve(e.code));
}));
(async () => {
  const out = {
    testHost: await get('http://' + testHost + ':${HTTP_PORT}/'),
    hostLoopback: await tcp('127.0.0.1', loopbackPort),
    hostLoopbackViaGateway: await tcp('10.0.2.2', loopbackPort),
    hostAbstractSocket: await abstract(),
    resolvConf: fs.readFileSync('/etc/resolv.conf', 'utf8').trim().split('\\n').filter((l) => l.startsWith('nameserver')),
  };
  console.log(JSON.stringify(out));
})();
`;

interface ProbeResult {
  testHost: string;
  hostLoopback: string;
  hostLoopbackViaGateway: string;
  hostAbstractSocket: string;
  resolvConf: string[];
}

async function probe(network: NetworkCapability[] | undefined): Promise<ProbeResult> {
  const effective: EffectiveProfile = {
    ...NEUTRAL_PROFILE,
    filesystemPaths: [{ sourcePath: granted, targetPath: granted, accessMode: 'read-write' }],
    networkCapabilities: network,
  };
  const launch = { file: process.execPath, args: ['-e', PROBE, TEST_HOST, String(loopbackPort), ABSTRACT_NAME] };
  const policy = await compileContainment(effective, launch, { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') });
  if (policy === null) throw new Error('expected a contained launch');
  const handle = await executor.launch({ command: launch.file, args: launch.args, env: {}, policy });
  figures.sessions++;
  figures.inputs += 4;
  let stdout = '';
  let stderr = '';
  handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  handle.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [exit] = await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
  await handle.dispose();
  expect({ exit, stderr }).toEqual({ exit: { code: 0, signal: null }, stderr: '' });
  return JSON.parse(stdout) as ProbeResult;
}

/** slirp4netns processes this test process started that are still running. */
function ourSlirps(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return stat.includes('(slirp4netns)') && Number(fields[1]) === process.pid && fields[0] !== 'Z';
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe.skipIf(!IS_ROOT)('a sandbox has its own network namespace (skipped unless root: the test host needs ip netns and a veth pair)', () => {
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sy-netns-'));
    granted = join(root, 'granted');
    mkdirSync(granted);
    ip('netns', 'add', NETNS);
    netnsCreated = true;
    ip('link', 'add', VETH_HOST, 'type', 'veth', 'peer', 'name', VETH_NS);
    ip('link', 'set', VETH_NS, 'netns', NETNS);
    ip('addr', 'add', `${HOST_ADDRESS}/30`, 'dev', VETH_HOST);
    ip('link', 'set', VETH_HOST, 'up');
    ip('netns', 'exec', NETNS, 'ip', 'addr', 'add', `${TEST_HOST}/30`, 'dev', VETH_NS);
    ip('netns', 'exec', NETNS, 'ip', 'link', 'set', VETH_NS, 'up');
    ip('netns', 'exec', NETNS, 'ip', 'link', 'set', 'lo', 'up');
    const server = `require('node:http').createServer((q, s) => s.end('hello from the test host')).listen(${HTTP_PORT}, '${TEST_HOST}', () => console.log('listening'))`;
    const host = spawn('ip', ['netns', 'exec', NETNS, process.execPath, '-e', server], { stdio: ['ignore', 'pipe', 'inherit'] });
    testHost = host;
    await new Promise<void>((resolve, reject) => {
      host.once('exit', (code) => reject(new Error(`test host exited: ${code}`)));
      host.stdout?.once('data', () => resolve());
    });
    loopbackService = createServer((socket) => socket.on('error', () => {}).end('host loopback service\n'));
    await new Promise<void>((resolve) => loopbackService.listen(0, '127.0.0.1', resolve));
    loopbackPort = (loopbackService.address() as { port: number }).port;
    abstractService = createServer((socket) => socket.on('error', () => {}).end('host abstract socket\n'));
    await new Promise<void>((resolve) => abstractService.listen(ABSTRACT, resolve));
  });

  afterAll(async () => {
    figures.report();
    await executor.disposeAll();
    if (testHost !== undefined && testHost.exitCode === null) {
      const gone = new Promise((resolve) => testHost!.once('exit', resolve));
      testHost.kill('SIGKILL');
      await gone;
    }
    await new Promise((resolve) => (loopbackService ? loopbackService.close(resolve) : resolve(undefined)));
    await new Promise((resolve) => (abstractService ? abstractService.close(resolve) : resolve(undefined)));
    if (netnsCreated) {
      try {
        ip('link', 'del', VETH_HOST);
      } catch {
        // gone with the namespace already
      }
      ip('netns', 'del', NETNS);
    }
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });

  it('the host services are there: this machine reaches the test host, its own loopback service and abstract socket', async () => {
    const reach = (options: { port: number; host: string } | { path: string }) =>
      new Promise<string>((resolve) => {
        const socket = connect(options as never);
        socket.on('connect', () => (socket.destroy(), resolve('connected')));
        socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      });
    expect(await reach({ port: HTTP_PORT, host: TEST_HOST })).toBe('connected');
    expect(await reach({ port: loopbackPort, host: '127.0.0.1' })).toBe('connected');
    expect(await reach({ path: ABSTRACT })).toBe('connected');
  });

  it('internet-client reaches the test host, and neither the host loopback nor a host abstract socket', async () => {
    const result = await probe(['internet-client']);
    expect(result).toEqual({
      testHost: 'http 200 hello from the test host',
      hostLoopback: 'ECONNREFUSED',
      hostLoopbackViaGateway: expect.stringMatching(/^(ECONNREFUSED|ENETUNREACH|EHOSTUNREACH)$/),
      hostAbstractSocket: 'ECONNREFUSED',
      resolvConf: ['nameserver 10.0.2.3'],
    });
  });

  it('slirp4netns ends with the sandbox', async () => {
    await probe(['internet-client']);
    await expect.poll(ourSlirps, { timeout: 5_000 }).toEqual([]);
  });

  it.each<[string, NetworkCapability[] | undefined]>([
    ['no network ([])', []],
    ['loopback', ['loopback']],
    ['a profile that grants paths and says nothing of the network', undefined],
  ])('%s reaches neither the test host nor anything of the host', async (_name, network) => {
    const result = await probe(network);
    expect(result.testHost).toMatch(/^(ENETUNREACH|EHOSTUNREACH|timeout)$/);
    expect(result.hostLoopback).toBe('ECONNREFUSED');
    expect(result.hostLoopbackViaGateway).toMatch(/^(ENETUNREACH|EHOSTUNREACH|timeout)$/);
    expect(result.hostAbstractSocket).toBe('ECONNREFUSED');
  });
});
