/**
 * The simulated image builder behind `buildctl build` and Kaniko. It reads the build context
 * from a directory, fails when the Dockerfile is missing or contains `# kube-sim: fail`, and
 * otherwise pushes an OCI manifest describing the context to the in-process registry.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Registry } from './registry.js';

export interface BuildRequest {
  contextDir: string;
  /** Absolute path of the Dockerfile. */
  dockerfile: string;
  /** Image references to push; empty builds without pushing. */
  destinations: string[];
  /** Hosts (host:port) that reach the in-process registry. */
  registryHosts: string[];
  style: 'buildkit' | 'kaniko';
  out: (line: string) => void;
  err: (line: string) => void;
}

export interface BuildResult {
  exitCode: number;
  digest?: string;
}

export function parseImageRef(ref: string): { host: string; repo: string; reference: string } | undefined {
  let rest = ref;
  let host = 'docker.io';
  const first = rest.split('/')[0]!;
  if (rest.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    host = first;
    rest = rest.slice(first.length + 1);
  }
  let reference = 'latest';
  const at = rest.indexOf('@');
  if (at >= 0) {
    reference = rest.slice(at + 1);
    rest = rest.slice(0, at);
  } else {
    const colon = rest.lastIndexOf(':');
    if (colon >= 0) {
      reference = rest.slice(colon + 1);
      rest = rest.slice(0, colon);
    }
  }
  if (!rest) return undefined;
  return { host, repo: rest, reference };
}

async function walk(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p, base)));
    else if (e.isFile()) out.push(relative(base, p));
  }
  return out.sort();
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runBuild(req: BuildRequest, registry: Registry): Promise<BuildResult> {
  const { out, err } = req;
  const kaniko = req.style === 'kaniko';
  let text: string;
  try {
    if (!(await stat(req.dockerfile)).isFile()) throw new Error('not a file');
    text = await readFile(req.dockerfile, 'utf8');
  } catch {
    const name = relative(req.contextDir, req.dockerfile) || 'Dockerfile';
    if (kaniko)
      err(
        `Error: error resolving dockerfile path: please provide a valid path to a Dockerfile within the build context with --dockerfile`,
      );
    else err(`error: failed to solve: failed to read dockerfile: open ${name}: no such file or directory`);
    return { exitCode: 1 };
  }
  const files = await walk(req.contextDir);
  const layer = createHash('sha256');
  for (const f of files) {
    layer.update(f + '\0');
    layer.update(await readFile(join(req.contextDir, f)));
  }
  const instructions = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const fail = /^#\s*kube-sim:\s*fail\b[ \t]*(.*)$/m.exec(text);
  const delay = /^#\s*kube-sim:\s*build-ms\s+(\d+)/m.exec(text);
  if (delay) await sleep(Number(delay[1]));
  if (kaniko) out(`INFO[0000] Retrieving image manifest ${instructions[0]?.split(/\s+/)[1] ?? 'scratch'}`);
  else out(`#1 [internal] load build definition from ${relative(req.contextDir, req.dockerfile)}`);
  if (!kaniko) out(`#1 DONE 0.0s`);
  for (const [i, ins] of instructions.entries()) {
    if (kaniko) out(`INFO[0000] ${ins}`);
    else {
      out(`#${i + 2} [${i + 1}/${instructions.length}] ${ins}`);
      out(`#${i + 2} DONE 0.1s`);
    }
  }
  if (fail) {
    const why = fail[1] || 'simulated failure';
    const step =
      instructions.find((l) => /^RUN\b/i.test(l)) ?? instructions[instructions.length - 1] ?? 'RUN true';
    if (kaniko) err(`error building image: error building stage: failed to execute command: ${why}`);
    else
      err(
        `error: failed to solve: process "/bin/sh -c ${step.replace(/^RUN\s+/i, '')}" did not complete successfully: exit code: 1 (${why})`,
      );
    return { exitCode: 1 };
  }
  const layerDigest = `sha256:${layer.digest('hex')}`;
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: {},
      rootfs: { type: 'layers', diff_ids: [layerDigest] },
      history: instructions.map((created_by) => ({ created_by })),
    }),
  );
  const configDigest = `sha256:${createHash('sha256').update(config).digest('hex')}`;
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: configDigest,
        size: config.length,
      },
      layers: [
        { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layerDigest, size: files.length },
      ],
      annotations: { 'dev.tend.kube-sim.files': String(files.length) },
    }),
  );
  let digest: string | undefined;
  for (const dest of req.destinations) {
    const ref = parseImageRef(dest);
    if (!ref || !req.registryHosts.includes(ref.host)) {
      const host = ref?.host ?? dest;
      if (kaniko)
        err(
          `error pushing image: failed to push to destination ${dest}: Get "https://${host}/v2/": dial tcp: lookup ${host}: no such host`,
        );
      else
        err(
          `error: failed to solve: failed to push ${dest}: failed to do request: Head "https://${host}/v2/": dial tcp: lookup ${host}: no such host`,
        );
      return { exitCode: 1 };
    }
    digest = registry.put(ref.repo, ref.reference, manifest, 'application/vnd.oci.image.manifest.v1+json');
    if (kaniko) out(`INFO[0001] Pushed ${ref.host}/${ref.repo}@${digest}`);
    else {
      out(`#${instructions.length + 2} exporting to image`);
      out(`#${instructions.length + 2} pushing manifest for ${dest}@${digest}`);
      out(`#${instructions.length + 2} DONE 0.1s`);
    }
  }
  if (!digest) digest = `sha256:${createHash('sha256').update(manifest).digest('hex')}`;
  return { exitCode: 0, digest };
}
