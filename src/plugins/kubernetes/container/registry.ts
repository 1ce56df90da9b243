/**
 * The deployment registry, through the OCI distribution API: an image is built for a version when
 * `HEAD /v2/<name>/manifests/<tag>` answers 200. Plain HTTP for localhost (or `insecureRegistry`),
 * HTTPS otherwise. This is not a Kubernetes API call: it touches no namespace.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../../errors.js';
import { headerValue, httpRequest } from '../../../http-request.js';
import type { ProviderSettings } from '../config.js';

export interface ImageRef {
  /** `registry.example.com:5000` */
  host: string;
  /** `shop/api` */
  repository: string;
  tag: string;
  /** `registry.example.com:5000/shop/api:v-0123abcd` */
  full: string;
}

export function imageFor(settings: ProviderSettings, actionName: string, version: string): ImageRef {
  const registry = settings.deploymentRegistry;
  if (!registry) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      'the kubernetes provider needs `deploymentRegistry` to build images (e.g. registry.example.com/shop); ' +
        'the cluster advertises no local registry (no local-registry-hosting ConfigMap in kube-public)',
      { plugin: 'kubernetes' },
    );
  }
  const [host, ...rest] = registry.replace(/\/+$/, '').split('/');
  const repository = [...rest, actionName.toLowerCase()].join('/');
  return { host: host!, repository, tag: version, full: `${host}/${repository}:${version}` };
}

export function isInsecure(settings: ProviderSettings, host: string): boolean {
  if (settings.insecureRegistry !== undefined) return settings.insecureRegistry;
  const name = host.replace(/:\d+$/, '');
  return name === 'localhost' || name.startsWith('127.') || name === '[::1]' || name.endsWith('.localhost');
}

/** The digest of the tag, or undefined when the registry does not have it. Retries transient failures. */
export async function manifestDigest(
  settings: ProviderSettings,
  image: ImageRef,
  retries = settings.retries,
): Promise<string | undefined> {
  const scheme = isInsecure(settings, image.host) ? 'http' : 'https';
  const url = `${scheme}://${image.host}/v2/${image.repository}/manifests/${encodeURIComponent(image.tag)}`;
  const accept = [
    'application/vnd.oci.image.manifest.v1+json',
    'application/vnd.oci.image.index.v1+json',
    'application/vnd.docker.distribution.manifest.v2+json',
    'application/vnd.docker.distribution.manifest.list.v2+json',
  ].join(', ');
  let lastError = '';
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt > 0) await delay(Math.min(5000, 200 * 2 ** attempt));
    try {
      const response = await httpRequest(new URL(url), {
        method: 'HEAD',
        headers: { accept },
        agent: false,
        signal: AbortSignal.timeout(15_000),
      });
      if (response.status === 200) {
        return headerValue(response.headers, 'docker-content-digest') ?? 'unknown';
      }
      if (response.status === 404) return undefined;
      lastError = `HTTP ${response.status}`;
      if (response.status === 401 || response.status === 403) break;
      if (response.status !== 429 && response.status < 500) break;
    } catch (error) {
      lastError = (error as Error).message;
    }
  }
  throw new TendError('TEND_K8S_API', `could not ask the registry for ${image.full}: ${lastError}`, {
    detail: { url },
  });
}
