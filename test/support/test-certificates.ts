/**
 * A throwaway CA and a server certificate for one name that it signed, made with openssl into a
 * test's scratch dir: `ca.pem` (to trust), `cert.pem` and `key.pem` (to serve). A CA-signed leaf,
 * not a self-signed one, because rustls (Deno's TLS) refuses a CA certificate as a server's own.
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCertificates {
  /** Paths of the CA's certificate, and the server's certificate and key. */
  caFile: string;
  certFile: string;
  keyFile: string;
  /** The same three as PEM text. */
  ca: string;
  cert: string;
  key: string;
}

export function issueTestCertificates(dir: string, name: string): TestCertificates {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const curve = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...curve, '-days', '1', '-subj', '/CN=Switchyard test CA', '-keyout', 'ca-key.pem', '-out', 'ca.pem');
  openssl('req', '-new', ...curve, '-subj', `/CN=${name}`, '-keyout', 'key.pem', '-out', 'leaf.csr');
  writeFileSync(join(dir, 'leaf.ext'), `basicConstraints=CA:FALSE\nsubjectAltName=DNS:${name}\nextendedKeyUsage=serverAuth\n`);
  openssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-days', '1', '-extfile', 'leaf.ext', '-out', 'cert.pem');
  const file = (base: string) => join(dir, base);
  return { caFile: file('ca.pem'), certFile: file('cert.pem'), keyFile: file('key.pem'), ca: readFileSync(file('ca.pem'), 'utf8'), cert: readFileSync(file('cert.pem'), 'utf8'), key: readFileSync(file('key.pem'), 'utf8') };
}
