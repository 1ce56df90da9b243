/**
 * A throwaway CA and a server certificate for 127.0.0.1/localhost, and client certificates the CA
 * signs on request, made with the openssl CLI.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A new P-256 key, unencrypted. */
const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A certificate the CA signed, and its key. */
interface SignedCertificate {
  certPem: string;
  keyPem: string;
}

export type ClientCertificate = SignedCertificate;

export interface Certs extends SignedCertificate {
  caPem: string;
}

export async function generateCerts(dir: string): Promise<Certs> {
  await run('openssl', [
    'req',
    '-x509',
    ...newKey,
    '-keyout',
    join(dir, 'ca.key'),
    '-out',
    join(dir, 'ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=kube-sim-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const server = await signedByCa(
    dir,
    'server',
    '/CN=kube-sim',
    'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n',
  );
  return { caPem: await readFile(join(dir, 'ca.crt'), 'utf8'), ...server };
}

let issued = 0;

/**
 * A client certificate signed by the CA in `dir` (generateCerts), for X.509 authentication as an
 * API server does it: the subject's CN is the user's name, each O one of its groups.
 */
export async function issueClientCertificate(
  dir: string,
  user: string,
  groups: readonly string[],
): Promise<ClientCertificate> {
  // `/` and `=` separate the subject's parts; a name with them would be another subject.
  if (![user, ...groups].every((part) => /^[\w.:@-]+$/.test(part)))
    throw new Error(
      `kube-sim: a client certificate's user and groups are [\\w.:@-]+ (got ${[user, ...groups].join(', ')})`,
    );
  return signedByCa(
    dir,
    `client-${++issued}`,
    `/CN=${user}${groups.map((group) => `/O=${group}`).join('')}`,
    'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n',
  );
}

/** A new key and a certificate for `subject` with `extensions`, signed by the CA in `dir`; files `<name>.*`. */
async function signedByCa(
  dir: string,
  name: string,
  subject: string,
  extensions: string,
): Promise<SignedCertificate> {
  const p = (suffix: string): string => join(dir, `${name}.${suffix}`);
  await run('openssl', ['req', '-new', ...newKey, '-keyout', p('key'), '-out', p('csr'), '-subj', subject]);
  await writeFile(p('ext.cnf'), extensions);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    p('csr'),
    '-CA',
    join(dir, 'ca.crt'),
    '-CAkey',
    join(dir, 'ca.key'),
    '-CAcreateserial',
    '-out',
    p('crt'),
    '-days',
    '2',
    '-extfile',
    p('ext.cnf'),
  ]);
  const [certPem, keyPem] = await Promise.all([readFile(p('crt'), 'utf8'), readFile(p('key'), 'utf8')]);
  return { certPem, keyPem };
}
