/** A throwaway CA and a server certificate for 127.0.0.1/localhost, made with the openssl CLI. */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Certs {
  caPem: string;
  certPem: string;
  keyPem: string;
}

export async function generateCerts(dir: string): Promise<Certs> {
  const p = (f: string): string => join(dir, f);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=kube-sim-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await run('openssl', [
    'req',
    '-new',
    ...ec,
    '-keyout',
    p('server.key'),
    '-out',
    p('server.csr'),
    '-subj',
    '/CN=kube-sim',
  ]);
  await writeFile(
    p('ext.cnf'),
    'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n',
  );
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    p('server.csr'),
    '-CA',
    p('ca.crt'),
    '-CAkey',
    p('ca.key'),
    '-CAcreateserial',
    '-out',
    p('server.crt'),
    '-days',
    '2',
    '-extfile',
    p('ext.cnf'),
  ]);
  const [caPem, certPem, keyPem] = await Promise.all([
    readFile(p('ca.crt'), 'utf8'),
    readFile(p('server.crt'), 'utf8'),
    readFile(p('server.key'), 'utf8'),
  ]);
  return { caPem, certPem, keyPem };
}
