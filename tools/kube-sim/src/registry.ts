/**
 * A minimal OCI distribution registry: `/v2/`, manifests by tag and digest (HEAD, GET, PUT,
 * DELETE) and tag lists. Blobs are not stored; the simulated builder pushes manifests only.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface StoredManifest {
  digest: string;
  mediaType: string;
  body: Buffer;
}

interface Repo {
  tags: Map<string, string>;
  manifests: Map<string, StoredManifest>;
}

const NAME = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;

export class Registry {
  private readonly repos = new Map<string, Repo>();

  put(name: string, reference: string, body: Buffer, mediaType: string): string {
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    let repo = this.repos.get(name);
    if (!repo) {
      repo = { tags: new Map(), manifests: new Map() };
      this.repos.set(name, repo);
    }
    repo.manifests.set(digest, { digest, mediaType, body });
    if (!reference.startsWith('sha256:')) repo.tags.set(reference, digest);
    return digest;
  }

  get(name: string, reference: string): StoredManifest | undefined {
    const repo = this.repos.get(name);
    if (!repo) return undefined;
    const digest = reference.startsWith('sha256:') ? reference : repo.tags.get(reference);
    return digest ? repo.manifests.get(digest) : undefined;
  }

  tags(name: string): string[] {
    return [...(this.repos.get(name)?.tags.keys() ?? [])].sort();
  }

  repositories(): string[] {
    return [...this.repos.keys()].sort();
  }

  /** Serve a `/v2/...` request. */
  handle(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://registry');
    const path = decodeURIComponent(url.pathname);
    res.setHeader('Docker-Distribution-API-Version', 'registry/2.0');
    if (path === '/v2/' || path === '/v2') return json(res, 200, {});
    if (path === '/v2/_catalog') return json(res, 200, { repositories: this.repositories() });
    let m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(path);
    if (m) {
      const [, name, reference] = m as unknown as [string, string, string];
      if (!NAME.test(name)) return ociError(res, 400, 'NAME_INVALID', 'invalid repository name');
      switch (req.method) {
        case 'GET':
        case 'HEAD': {
          const man = this.get(name, reference);
          if (!man) return ociError(res, 404, 'MANIFEST_UNKNOWN', `manifest unknown`, { name, reference });
          res.writeHead(200, {
            'Content-Type': man.mediaType,
            'Content-Length': man.body.length,
            'Docker-Content-Digest': man.digest,
          });
          res.end(req.method === 'GET' ? man.body : undefined);
          return;
        }
        case 'PUT': {
          let mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
          try {
            const parsed = JSON.parse(body.toString('utf8')) as { mediaType?: string };
            mediaType ||= parsed.mediaType ?? 'application/vnd.oci.image.manifest.v1+json';
          } catch {
            return ociError(res, 400, 'MANIFEST_INVALID', 'manifest invalid');
          }
          const digest = this.put(name, reference, body, mediaType);
          if (reference.startsWith('sha256:') && reference !== digest) {
            return ociError(res, 400, 'DIGEST_INVALID', 'provided digest did not match uploaded content');
          }
          res.writeHead(201, {
            Location: `/v2/${name}/manifests/${digest}`,
            'Docker-Content-Digest': digest,
          });
          res.end();
          return;
        }
        case 'DELETE': {
          const repo = this.repos.get(name);
          const man = this.get(name, reference);
          if (!repo || !man) return ociError(res, 404, 'MANIFEST_UNKNOWN', 'manifest unknown');
          repo.manifests.delete(man.digest);
          for (const [t, d] of repo.tags) if (d === man.digest) repo.tags.delete(t);
          res.writeHead(202);
          res.end();
          return;
        }
        default:
          return ociError(res, 405, 'UNSUPPORTED', 'method not allowed');
      }
    }
    m = /^\/v2\/(.+)\/tags\/list$/.exec(path);
    if (m && (req.method === 'GET' || req.method === 'HEAD')) {
      const name = m[1]!;
      if (!this.repos.has(name))
        return ociError(res, 404, 'NAME_UNKNOWN', 'repository name not known to registry', { name });
      return json(res, 200, { name, tags: this.tags(name) });
    }
    m = /^\/v2\/(.+)\/blobs\/([^/]+)$/.exec(path);
    if (m)
      return ociError(res, 404, 'BLOB_UNKNOWN', 'blob unknown to registry (kube-sim stores manifests only)');
    return ociError(res, 404, 'NAME_UNKNOWN', 'not found');
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(s) });
  res.end(s);
}

function ociError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  detail?: unknown,
): void {
  json(res, status, { errors: [{ code, message, ...(detail ? { detail } : {}) }] });
}
