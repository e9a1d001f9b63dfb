/**
 * The host key: this workstation's Ed25519 private key, which proves its identity on every link
 * (DESIGN §5): it signs each dial's upgrade request and each challenge of the worker. One file in the config dir, `host.key` by default: PKCS#8 in PEM (`-----BEGIN
 * PRIVATE KEY-----`, what `openssl pkey` reads), mode 0600, written once by `switchyard sidecar
 * init` (or the first `npm start`) and never overwritten. The worker gets only the public key,
 * `ed25519:<base64url>`.
 *
 * Loading refuses a key that other users can read, as ssh does: a readable key is a leaked one.
 * Signing goes through WebCrypto, the same implementation the worker verifies with.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fchmodSync, fsyncSync, linkSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { LocalError } from '../../shared/errors.ts';
import { formatPublicKey } from '../../shared/link/link-identity.ts';
import { signLinkStatement, type LinkSignable } from '../../shared/link/link-upgrade-proof.ts';
import { randomEd25519Pkcs8 } from './ed25519-seed.ts';

export const DEFAULT_KEY_FILE = 'host.key';

const ED25519 = { name: 'Ed25519' } as const;
const PEM_LABEL = 'PRIVATE KEY';

export interface HostKey {
  /** Where the private key lives. */
  readonly path: string;
  /** `ed25519:<base64url>`: the worker config's `hosts[].public-key`. */
  readonly publicKey: string;
  /** Signs a link statement (base64url signature): the upgrade proof of a dial, or the proof of a challenge. */
  sign(fields: LinkSignable): Promise<string>;
}

/** `sidecar init` is the same command in both programs that host a sidecar: `switchyard`, and a workstation's one-file `sidecar.js`. */
const INIT_HINT = 'create it with `sidecar init --config-dir DIR --worker URL --entity-id ID` (`switchyard sidecar init …`, or `node sidecar.js sidecar init …` on a workstation)';
const READ_PROBLEMS: Record<string, string> = { ENOENT: 'not found', EACCES: 'not readable', EISDIR: 'a folder, not a file' };

/**
 * Reads and checks the key at `path`; `LocalError('invalid-config')` saying what to do otherwise,
 * or `LocalError('host-key-exposed')` when other users may read it (a chmod fixes that, the key
 * stays the host's identity).
 */
export async function loadHostKey(path: string): Promise<HostKey> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unreadable';
    throw new LocalError('invalid-config', `Cannot read the host key "${path}": ${READ_PROBLEMS[code] ?? code}${code === 'ENOENT' ? `: ${INIT_HINT}` : ''}`);
  }
  const mode = process.platform === 'win32' ? 0 : statSync(path).mode;
  if ((mode & 0o077) !== 0) {
    throw new LocalError('host-key-exposed', `Host key "${path}" is readable by ${(mode & 0o007) !== 0 ? 'other users' : 'its group'}: run chmod 600 "${path}"`);
  }
  return fromPkcs8(path, pemToDer(path, text));
}

/**
 * Makes a new key from a random seed (`ed25519-seed.ts`: no key-generation job, which can hang
 * Node 20) and writes it to `path` (0600); never replaces an existing file.
 */
export async function createHostKey(path: string): Promise<HostKey> {
  const der = randomEd25519Pkcs8();
  // Written whole beside it, then linked into place: a crash mid-write leaves no half key at
  // `path` (which every later start would refuse), and a key already there is never replaced.
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = openSync(temporary, 'wx', 0o600);
    try {
      writeSync(fd, derToPem(der));
      fchmodSync(fd, 0o600); // the umask may have narrowed the mode further, never widened it; be exact
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(temporary, path);
    } catch (error) {
      // A file system without hard links (vfat, some FUSE mounts): written in place, as before.
      if (!['EPERM', 'ENOTSUP', 'ENOSYS', 'EOPNOTSUPP'].includes((error as { code?: string }).code ?? '')) throw error;
      writeFileSync(path, derToPem(der), { mode: 0o600, flag: 'wx' });
      chmodSync(path, 0o600);
    }
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unwritable';
    if (code === 'EEXIST') throw new LocalError('key-exists', `Host key "${path}" already exists: it is kept, never overwritten (delete it first to make a new identity)`);
    throw new LocalError('invalid-config', `Cannot write the host key "${path}": ${code}`);
  } finally {
    rmSync(temporary, { force: true });
  }
  return fromPkcs8(path, der);
}

/** The key at `path`, created first when the file does not exist (`npm start`'s state dir). */
export async function loadOrCreateHostKey(path: string): Promise<{ key: HostKey; created: boolean }> {
  try {
    return { key: await createHostKey(path), created: true };
  } catch (error) {
    if (!(error instanceof LocalError) || error.code !== 'key-exists') throw error;
    return { key: await loadHostKey(path), created: false };
  }
}

async function fromPkcs8(path: string, der: Uint8Array<ArrayBuffer>): Promise<HostKey> {
  let privateKey: CryptoKey;
  let publicKey: string;
  try {
    // The public half is the JWK's `x`; the extractable copy lives only for that read.
    const extractable = await crypto.subtle.importKey('pkcs8', der, ED25519, true, ['sign']);
    const { x } = await crypto.subtle.exportKey('jwk', extractable);
    privateKey = await crypto.subtle.importKey('pkcs8', der, ED25519, false, ['sign']);
    publicKey = formatPublicKey(new Uint8Array(Buffer.from(x ?? '', 'base64url')));
  } catch {
    throw new LocalError('invalid-config', `Host key "${path}" is not an Ed25519 private key (PKCS#8 PEM, as \`switchyard sidecar init\` writes it)`);
  }
  return { path, publicKey, sign: (fields) => signLinkStatement(privateKey, fields) };
}

function derToPem(der: Uint8Array): string {
  const lines = Buffer.from(der).toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${PEM_LABEL}-----\n${lines.join('\n')}\n-----END ${PEM_LABEL}-----\n`;
}

function pemToDer(path: string, text: string): Uint8Array<ArrayBuffer> {
  const match = new RegExp(`-----BEGIN ${PEM_LABEL}-----([A-Za-z0-9+/=\\s]+)-----END ${PEM_LABEL}-----`).exec(text);
  if (match === null) throw new LocalError('invalid-config', `Host key "${path}" is not a PEM private key (-----BEGIN ${PEM_LABEL}-----): ${INIT_HINT}`);
  return new Uint8Array(Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64'));
}
