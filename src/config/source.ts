/**
 * One configuration file: its YAML documents and the positions of their keys and values.
 * Positions come from the YAML AST (node ranges) and a LineCounter; the AST is dropped after
 * loading and parsed again only when a later error needs a position.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseAllDocuments, visit } from 'yaml';
import type { Alias, Document, Node } from 'yaml';
import { shownText } from '../shown-text.js';
import type { SourceLocation } from '../errors.js';
import type { ConfigProblem } from './diagnostics.js';
import type { ConfigPath, LocateTarget } from './project.js';

export interface SourceDocument {
  /** Index of the document in its file (counting empty ones, so that positions can be found again). */
  index: number;
  /** The document as plain data. */
  value: unknown;
  /** Where the document's content starts. */
  location: SourceLocation;
}

/** Whether a document's data is a Project (`kind: Project`). */
export function isProjectDocument(value: unknown): value is Record<string, unknown> {
  return (value as { kind?: unknown } | null)?.kind === 'Project';
}

export class SourceFile {
  #lineCounter: LineCounter | undefined;
  #documents: Document.Parsed[] | undefined;
  #result: { documents: SourceDocument[]; problems: ConfigProblem[] } | undefined;
  #projectDocuments: { documents: SourceDocument[]; problems: ConfigProblem[] } | undefined;

  /**
   * @param file path relative to the project root, with `/` separators
   * @param text the file's content
   * @param parsed what `parseAll` gave for this content before (src/config/parse-cache.ts)
   * @param projectDocumentOnly only its Project document is configuration: a Garden file at the
   *   root that the project's scan leaves out, which Garden reads for the Project alone
   */
  constructor(
    readonly file: string,
    readonly text: string,
    parsed?: SourceDocument[],
    readonly projectDocumentOnly = false,
  ) {
    if (parsed) this.#result = { documents: parsed, problems: [] };
  }

  /** The documents that are configuration (all, or the Project alone), and the file's YAML problems. */
  parse(): { documents: SourceDocument[]; problems: ConfigProblem[] } {
    if (!this.projectDocumentOnly) return this.parseAll();
    const { documents, problems } = this.parseAll();
    this.#projectDocuments ??= {
      documents: documents.filter((doc) => isProjectDocument(doc.value)),
      problems,
    };
    return this.#projectDocuments;
  }

  /** Parses every document (once); YAML errors become problems and their documents are left out. */
  parseAll(): { documents: SourceDocument[]; problems: ConfigProblem[] } {
    this.#result ??= this.#parse();
    return this.#result;
  }

  #parse(): { documents: SourceDocument[]; problems: ConfigProblem[] } {
    const documents: SourceDocument[] = [];
    const problems: ConfigProblem[] = [];
    this.#parsed().forEach((doc, index) => {
      const error = doc.errors[0];
      if (error) {
        // Only the first: the errors after a syntax error are mostly its echoes.
        const offset = error.pos[0];
        const unquotedTemplate = this.text[offset] === '{' && this.text[offset - 1] === '$';
        problems.push({
          code: 'TEND_CONFIG_YAML',
          message: yamlMessage(doc, unquotedTemplate, error.code, error.message, offset),
          location: this.position(unquotedTemplate ? offset - 1 : offset),
        });
        return;
      }
      const contents = doc.contents;
      if (contents === null || (isScalar(contents) && contents.value === null)) return; // empty document
      const location = this.position(contents.range[0]);
      try {
        documents.push({ index, value: doc.toJS({ maxAliasCount: 1000 }), location });
      } catch (error) {
        const alias = unresolvedAlias(doc);
        const message = alias
          ? `the alias *${shownText(alias.source)} names no anchor &${shownText(alias.source)} set before it; ` +
            'a plain value starting with * is a YAML alias: quote the value if it is text'
          : error instanceof Error
            ? error.message
            : String(error);
        const at = alias?.range ? this.position(alias.range[0]) : location;
        problems.push({ code: 'TEND_CONFIG_YAML', message: `YAML error: ${message}`, location: at });
      }
    });
    return { documents, problems };
  }

  /**
   * The position of a key or value inside a document. When the path does not exist (a missing
   * key), the position of its deepest existing parent.
   */
  locate(documentIndex: number, path: ConfigPath, target: LocateTarget = 'value'): SourceLocation {
    const doc = this.#parsed()[documentIndex];
    if (!doc) return { file: this.file, line: 1, column: 1 };
    let node: unknown = doc.contents;
    let offset = doc.contents?.range[0] ?? doc.range[0];
    for (let i = 0; i < path.length; i++) {
      const segment = path[i];
      const last = i === path.length - 1;
      if (isMap(node)) {
        const pair = node.items.find(
          (item) => isScalar(item.key) && String(item.key.value) === String(segment),
        );
        if (!pair) break;
        const keyNode = pair.key as Node;
        if (last && target === 'key') return this.position(keyNode.range?.[0] ?? offset);
        const valueNode = pair.value as Node | null;
        if (!valueNode?.range) return this.position(keyNode.range?.[0] ?? offset);
        node = valueNode;
        offset = valueNode.range[0];
      } else if (isSeq(node)) {
        const item = node.items[Number(segment)] as Node | null | undefined;
        if (!item?.range) break;
        node = item;
        offset = item.range[0];
      } else {
        break;
      }
    }
    return this.position(offset);
  }

  /** 1-based line and column of an offset. */
  position(offset: number): SourceLocation {
    if (!this.#lineCounter) this.#parsed(); // a file given as parsed before has not been read yet
    const { line, col } = this.#lineCounter!.linePos(offset);
    return { file: this.file, line, column: col };
  }

  /** Drops the AST once loading is done; `locate` parses again if it is needed later. */
  release(): void {
    this.#documents = undefined;
  }

  #parsed(): Document.Parsed[] {
    if (!this.#documents) {
      this.#lineCounter = new LineCounter();
      this.#documents = parseAllDocuments(this.text, {
        lineCounter: this.#lineCounter,
        prettyErrors: false,
        uniqueKeys: true,
        // YAML 1.1 merge keys (`<<: *defaults`), which Garden projects use.
        merge: true,
      }) as Document.Parsed[];
    }
    return this.#documents;
  }
}

/** YAML's messages, made a little friendlier where we know more (the duplicated key's name). */
function yamlMessage(
  doc: Document.Parsed,
  unquotedTemplate: boolean,
  code: string,
  message: string,
  offset: number,
): string {
  if (unquotedTemplate) {
    return (
      'YAML syntax error: a template expression inside a flow mapping or list ({ } or [ ]) must be quoted, ' +
      'e.g. { image: "${actions.build.api.outputs.image}" }'
    );
  }
  if (code === 'DUPLICATE_KEY') {
    let key: string | undefined;
    visit(doc, {
      Pair(_, pair) {
        if (isPair(pair) && isScalar(pair.key) && pair.key.range?.[0] === offset) {
          key = String(pair.key.value);
          return visit.BREAK;
        }
        return undefined;
      },
    });
    if (key !== undefined) return `duplicate key "${key}"; keys must be unique in a mapping`;
  }
  return `YAML syntax error: ${message}`;
}

/**
 * The first alias of a document that no anchor before it names (`host: *HOSTNAME`, often a
 * README's placeholder): the YAML library's error names no position. One pass in document order,
 * as an alias refers to the last anchor of its name before it.
 */
function unresolvedAlias(doc: Document.Parsed): Alias | undefined {
  const anchors = new Set<string>();
  let found: Alias | undefined;
  visit(doc, {
    Node(_key, node) {
      if (node.anchor) anchors.add(node.anchor);
    },
    Alias(_key, node) {
      if (anchors.has(node.source)) return undefined;
      found = node;
      return visit.BREAK;
    },
  });
  return found;
}
