/**
 * Parsed configuration files from the last load, in `.tend/cache/config.json`, so that a
 * command over an unchanged project does not parse its YAML again (parsing is most of loading a
 * large project). An entry is used only for a file whose content has the same SHA-256; what it
 * holds (each document's data and where it starts) is what parsing the file gives. The
 * documents are still checked against the schemas on every load, and a position needed for an
 * error parses the file then. A cache: a missing, torn or foreign file is ignored and rewritten.
 */
import { Type, type Static } from 'typebox';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sha256Hex } from '../hash.js';
import { writeFileAtomic } from '../state/files.js';
import { AnyKey, schemaCheck, weightOfJson } from '../schema-check.js';
import type { SourceDocument } from './source.js';

/** Changes when what parsing yields, or this file's layout, changes. */
const format = 2;
/** Larger is not a cache worth reading at every start (a project of some thousand action files fits). */
const maxCacheBytes = 64 * 1024 * 1024;

const Location = Type.Object({ file: Type.String(), line: Type.Integer(), column: Type.Integer() });
const Entry = Type.Object({
  sha256: Type.String(),
  documents: Type.Array(Type.Object({ index: Type.Integer(), value: Type.Unknown(), location: Location })),
});
const CacheFile = Type.Object({ format: Type.Literal(format), files: Type.Record(AnyKey(), Entry) });
type CacheFile = Static<typeof CacheFile>;

export class ParseCache {
  readonly #file: string;
  readonly #previous: CacheFile['files'];
  readonly #next: CacheFile['files'] = {};
  #changed = false;

  /** @param cacheDir the project's `.tend/cache` */
  constructor(cacheDir: string) {
    this.#file = path.join(cacheDir, 'config.json');
    this.#previous = readCache(this.#file);
  }

  /** The documents of `file` as parsed before, when its content is `text`. */
  lookup(file: string, text: string, sha256 = sha256Hex(text)): SourceDocument[] | undefined {
    const entry = Object.hasOwn(this.#previous, file) ? this.#previous[file] : undefined;
    if (entry?.sha256 !== sha256) return undefined;
    this.#next[file] = entry;
    return entry.documents as SourceDocument[];
  }

  /** Remembers a file parsed without problems, when its data survives JSON as it is. */
  store(file: string, sha256: string, documents: SourceDocument[]): void {
    if (this.#next[file]?.sha256 === sha256) return; // looked up: nothing new
    if (!documents.every((doc) => isPlainJson(doc.value, new Set()))) return;
    this.#next[file] = { sha256, documents };
    this.#changed = true;
  }

  /** Writes the entries looked up or stored in this load (and only them), if any changed. */
  save(): void {
    const dropped = Object.keys(this.#previous).some((file) => !Object.hasOwn(this.#next, file));
    if (!this.#changed && !dropped) return;
    try {
      writeFileAtomic(this.#file, JSON.stringify({ format, files: this.#next } satisfies CacheFile), 0o644, {
        durable: false,
      });
    } catch {
      // A read-only project still loads; it parses every time.
    }
  }
}

function readCache(file: string): CacheFile['files'] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return {};
  }
  if (text.length > maxCacheBytes) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return schemaCheck(CacheFile).Check(parsed, weightOfJson(text)) ? (parsed as CacheFile).files : {};
  } catch {
    return {};
  }
}

/**
 * Whether JSON gives the value back as it is: plain objects and arrays (each met once: a YAML
 * alias would come back as a copy), strings, booleans, null and finite numbers other than -0.
 */
function isPlainJson(value: unknown, seen: Set<object>): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object') return false;
  if (seen.has(value)) return false;
  seen.add(value);
  if (Array.isArray(value)) return value.every((item) => isPlainJson(item, seen));
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.entries(value).every(([key, item]) => key !== '__proto__' && isPlainJson(item, seen));
}
