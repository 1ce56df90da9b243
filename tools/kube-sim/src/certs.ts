/**
 * A throwaway CA and a server certificate for 127.0.0.1/localhost, and client certificates the CA
 * signs on request, made with the openssl CLI.
 */
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

export interface ClientCertificate {
  certPem: string;
  keyPem: string;
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
  const prefix = join(dir, `client-${++issued}-`);
  const p = (f: string): string => `${prefix}${f}`;
  // `/` and `=` separate the subject's parts; a name with them would be another subject.
  if (![user, ...groups].every((part) => /^[\w.:@-]+$/.test(part)))
    throw new Error(
      `kube-sim: a client certificate's user and groups are [\\w.:@-]+ (got ${[user, ...groups].join(', ')})`,
    );
  const subject = `/CN=${user}${groups.map((group) => `/O=${group}`).join('')}`;
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-new',
    ...ec,
    '-keyout',
    p('key.pem'),
    '-out',
    p('csr.pem'),
    '-subj',
    subject,
  ]);
  await writeFile(
    p('ext.cnf'),
    'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n',
  );
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    p('csr.pem'),
    '-CA',
    join(dir, 'ca.crt'),
    '-CAkey',
    join(dir, 'ca.key'),
    '-CAcreateserial',
    '-out',
    p('cert.pem'),
    '-days',
    '2',
    '-extfile',
    p('ext.cnf'),
  ]);
  const [certPem, keyPem] = await Promise.all([
    readFile(p('cert.pem'), 'utf8'),
    readFile(p('key.pem'), 'utf8'),
  ]);
  return { certPem, keyPem };
}
