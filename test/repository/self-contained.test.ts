/**
 * The repository stands alone: no tracked file refers to a design file or a path outside it, and
 * every relative link in the docs (README.md, docs/*.md) leads to a file that exists and, with an
 * `#anchor` into a markdown page, to one of that page's headings.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from '../helpers/project.js';

const thisFile = path
  .relative(repoRoot, fileURLToPath(import.meta.url))
  .split(path.sep)
  .join('/');

// Built from pieces so that this file does not contain what it looks for.
const design = 'DESIGN';
const needles = [['..', 'shared'].join('/'), `shared/${design}`, `${design}.md`, `${design} §`];

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: repoRoot, encoding: 'utf8' });
  return out.split('\0').filter((f) => f !== '' && f !== thisFile);
}

/** The file's text, or undefined for binary files and tracked paths missing from the checkout. */
function readText(file: string): string | undefined {
  const full = path.join(repoRoot, file);
  if (!existsSync(full) || !statSync(full).isFile()) return undefined;
  const bytes = readFileSync(full);
  return bytes.includes(0) ? undefined : bytes.toString('utf8');
}

function docFiles(): string[] {
  return trackedFiles().filter((f) => f === 'README.md' || /^docs\/[^/]+\.md$/.test(f));
}

/** Markdown without fenced code blocks and inline code, line numbers kept (a fenced line becomes empty). */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      return '';
    }
    if (marker !== undefined) {
      fence = marker;
      return '';
    }
    return line.replace(/(`+)[^`]*?\1/g, '');
  });
}

/** GitHub's anchor for a heading: lower-case, punctuation dropped, spaces to `-`. */
function githubSlug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor of a markdown page; repeated headings get `-1`, `-2`… as on GitHub. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      continue;
    }
    if (marker !== undefined) {
      fence = marker;
      continue;
    }
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

describe('the repository stands alone', () => {
  it('has no reference to a design file or a path outside the repository', () => {
    const hits: string[] = [];
    for (const file of trackedFiles()) {
      const text = readText(file);
      if (text === undefined) continue;
      text.split('\n').forEach((line, index) => {
        const found = needles.filter((needle) => line.includes(needle));
        if (found.length > 0) hits.push(`${file}:${index + 1}: ${found.join(', ')}`);
      });
    }
    expect(hits).toEqual([]);
  });

  it('has no broken relative link in README.md and docs/*.md', () => {
    const broken: string[] = [];
    for (const file of docFiles()) {
      const text = readText(file) ?? '';
      proseLines(text).forEach((line, index) => {
        for (const match of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
          const link = match[1]!;
          if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
          const [target = '', anchor] = link.split('#', 2);
          const where = `${file}:${index + 1}: ${link}`;
          const targetPath = target === '' ? file : path.posix.join(path.posix.dirname(file), target);
          const full = path.join(repoRoot, targetPath);
          if (!existsSync(full)) {
            broken.push(`${where} (no such file)`);
            continue;
          }
          if (anchor !== undefined && targetPath.endsWith('.md')) {
            if (!anchorsOf(readFileSync(full, 'utf8')).has(anchor)) broken.push(`${where} (no such heading)`);
          }
        }
      });
    }
    expect(broken).toEqual([]);
  });

  it('finds the headings of docs/design.md by their GitHub anchors', () => {
    const anchors = anchorsOf(readFileSync(path.join(repoRoot, 'docs', 'design.md'), 'utf8'));
    for (const section of [
      'processes',
      'configuration',
      'execution',
      'events',
      'kubernetes-provider',
      'event-stream',
      'server-and-cleanup',
      'tests-and-local-infrastructure',
      'the-namespacestatus-payload',
      'the-event-guarantee',
    ]) {
      expect(anchors, section).toContain(section);
    }
    expect(githubSlug('Ingest: `POST /api/v1/events`')).toBe('ingest-post-apiv1events');
  });
});
