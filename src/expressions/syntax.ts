/**
 * The syntax of template strings, Garden's language (docs/templates.md): text with `${…}`
 * expressions, `$${` for a literal `${`, `${if …}…${else}…${endif}` blocks, and the optional
 * suffix `${…}?`, read as the caller chooses (`SyntaxOptions`).
 *
 * A hand-written recursive-descent parser, not a generated one (peggy) or jsep: identifiers hold
 * dashes (`var.my-var`), so `-` and `+` need spaces around them as Garden has it; a string literal
 * holds a template of its own; and an expression ends at its `}`, which is found by parsing, not
 * by searching (a `}` inside a string literal does not end it). jsep can do none of these without
 * rewriting its scanner, and a generated parser would add a build step for a grammar this small.
 * Nesting is bounded (`maxDepth`), so hostile input gives an error, not a stack overflow.
 */
import { identifierPart, identifierStart, spaceCharacter } from './characters.js';

export type Value = unknown;

export type PathSegment = string | Expression;

export type BinaryOperator = '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%' | 'contains';

export type Expression =
  | { type: 'literal'; value: string | number | boolean | null }
  | { type: 'array'; elements: Expression[] }
  /** A context lookup: `var.replicas[environment.name]`. `text` is its source, for messages. */
  | { type: 'lookup'; root: string; path: PathSegment[]; text: string }
  | { type: 'call'; name: string; args: Expression[] }
  | { type: 'not' | 'typeof' | 'negate'; operand: Expression }
  | { type: 'binary'; operator: BinaryOperator; left: Expression; right: Expression }
  | { type: 'and' | 'or'; left: Expression; right: Expression }
  | { type: 'conditional'; test: Expression; consequent: Expression; alternate: Expression }
  /** A string literal holding `${…}` itself. */
  | { type: 'template'; template: Template };

export type TemplatePart =
  | { type: 'text'; text: string }
  /**
   * `source` is the `${…}` as written (with its `?` when optional), kept when an expression is
   * left for later. `optional` (`${…}?`): a key that is not there gives no value (undefined:
   * nothing in a longer string) instead of an error.
   */
  | { type: 'expression'; expression: Expression; source: string; optional?: true }
  | { type: 'if'; condition: Expression; then: TemplatePart[]; else: TemplatePart[]; source: string };

export interface Template {
  parts: TemplatePart[];
}

/**
 * What a `?` right after a `${…}`'s `}` means; the caller chooses, per configuration:
 * - `whole-value` (the default): a template that is one `${…}?` and nothing else is optional;
 *   anywhere else the `?` is text.
 * - `every-expression`: every `${…}?` is optional, a whole value or within a longer string.
 * - `text`: the `?` is text wherever it stands (`${var.x}?` is the value followed by "?").
 *
 * With `every-expression` and `text`, `${if …}?` is an error (Garden's parser refuses it).
 */
export type OptionalSuffix = 'whole-value' | 'every-expression' | 'text';

export interface SyntaxOptions {
  readonly optionalSuffix?: OptionalSuffix;
}

/** A syntax error; `offset`: where the `${` at fault starts in the text, when known (for its line). */
export class TemplateSyntaxError extends Error {
  override name = 'TemplateSyntaxError';
  offset?: number;
}

/** Where each `${` piece and part starts in its text: beside the parts, so that parts compare by meaning. */
const offsets = new WeakMap<object, number>();

/** The offset in its template's text where a part's `${` starts (undefined for text). */
export function partOffset(part: TemplatePart): number | undefined {
  return offsets.get(part);
}

/** Deeper nesting than this (parentheses, operators, calls) is refused. */
export const maxDepth = 200;

type Block =
  { kind: 'if'; condition: Expression; source: string } | { kind: 'else' | 'endif'; source: string };
type Piece = TemplatePart | Block;

/** Parses a template string. Throws TemplateSyntaxError. */
export function parseTemplateString(text: string, options: SyntaxOptions = {}): Template {
  const suffix = options.optionalSuffix ?? 'whole-value';
  const pieces: Piece[] = [];
  let literal = '';
  let i = 0;
  const flush = () => {
    if (literal) pieces.push({ type: 'text', text: literal });
    literal = '';
  };
  while (i < text.length) {
    const next = text.indexOf('$', i);
    if (next < 0) {
      literal += text.slice(i);
      break;
    }
    literal += text.slice(i, next);
    i = next;
    if (text.startsWith('$${', i)) {
      literal += '${';
      i += 3;
    } else if (text.startsWith('${', i)) {
      flush();
      const parser = new ExpressionParser(text, i, options);
      let piece: Piece;
      try {
        piece = parser.parseSegment();
      } catch (error) {
        // Nested templates (in string literals) count from their own text: the outermost `${` counts.
        if (error instanceof TemplateSyntaxError) error.offset = i;
        throw error;
      }
      offsets.set(piece, i);
      pieces.push(piece);
      const end = parser.position;
      i = text[end] === '?' && suffix !== 'whole-value' && isOptionalSuffix(piece, suffix, i) ? end + 1 : end;
    } else {
      literal += '$';
      i++;
    }
  }
  flush();
  return buildTemplate(pieces, suffix);
}

/**
 * Whether the `?` after a piece (whose `${` is at `start`) is its optional suffix: an
 * expression's, with `every-expression` (which marks it so); `${if …}?` is an error; else the `?`
 * is text.
 */
function isOptionalSuffix(piece: Piece, suffix: OptionalSuffix, start: number): boolean {
  if ('kind' in piece && piece.kind === 'if') {
    const error = new TemplateSyntaxError(
      `invalid template expression "${piece.source}?": an \${if ...} cannot have the optional suffix "?"; remove the "?"`,
    );
    error.offset = start;
    throw error;
  }
  if (suffix !== 'every-expression' || !('type' in piece) || piece.type !== 'expression') return false;
  markOptional(piece);
  return true;
}

/** An expression part with its `?`: optional. */
function markOptional(part: Extract<TemplatePart, { type: 'expression' }>): void {
  part.optional = true;
  part.source += '?';
}

/** Nests `${if}`/`${else}`/`${endif}` pieces, and finds the `?` suffix of a whole value. */
function buildTemplate(pieces: Piece[], suffix: OptionalSuffix): Template {
  const syntaxError = (message: string, at: Piece) => {
    const error = new TemplateSyntaxError(message);
    error.offset = offsets.get(at);
    return error;
  };
  const [first, last] = pieces;
  const questionMark = last && 'type' in last && last.type === 'text' && last.text === '?';
  if (suffix === 'whole-value' && pieces.length === 2 && questionMark) {
    if (first && 'type' in first && first.type === 'expression') {
      markOptional(first);
      pieces = [first];
    }
  }
  let position = 0;
  const nest = (inside: Block | undefined): { parts: TemplatePart[]; end?: Block } => {
    const parts: TemplatePart[] = [];
    while (position < pieces.length) {
      const piece = pieces[position++]!;
      if ('type' in piece) {
        parts.push(piece);
        continue;
      }
      if (piece.kind === 'if') {
        const consequent = nest(piece);
        let alternate: TemplatePart[] = [];
        let end = consequent.end;
        if (end?.kind === 'else') {
          const rest = nest(piece);
          if (rest.end?.kind === 'else')
            throw syntaxError(`more than one \${else} in one \${if ...} block`, rest.end);
          alternate = rest.parts;
          end = rest.end;
        }
        if (!end) throw syntaxError(`missing \${endif} after "${piece.source}"`, piece);
        const block: TemplatePart = {
          type: 'if',
          condition: piece.condition,
          then: consequent.parts,
          else: alternate,
          source: piece.source,
        };
        offsets.set(block, offsets.get(piece)!);
        parts.push(block);
        continue;
      }
      if (!inside) {
        throw syntaxError(`found "${piece.source}" without an \${if ...} before it`, piece);
      }
      return { parts, end: piece };
    }
    return { parts };
  };
  return { parts: nest(undefined).parts };
}

class ExpressionParser {
  position: number;
  private depth = 0;

  constructor(
    private readonly text: string,
    /** Where the `${` starts. */
    private readonly start: number,
    private readonly options: SyntaxOptions,
  ) {
    this.position = start + 2;
  }

  /** A `${…}`: an expression, or an if/else/endif block marker. */
  parseSegment(): Piece {
    this.skipSpace();
    const word = this.peekWord();
    if (word === 'else' || word === 'endif') {
      const after = this.position + word.length;
      const save = this.position;
      this.position = after;
      this.skipSpace();
      if (this.text[this.position] === '}') {
        this.position++;
        return { kind: word, source: this.source() };
      }
      this.position = save;
    }
    if (word === 'if' && spaceCharacter.test(this.text[this.position + 2] ?? '')) {
      this.position += 2;
      this.skipSpace();
      const condition = this.parseExpression();
      this.expectEnd();
      return { kind: 'if', condition, source: this.source() };
    }
    const expression = this.parseExpression();
    this.expectEnd();
    return { type: 'expression', expression, source: this.source() };
  }

  private source(): string {
    return this.text.slice(this.start, this.position);
  }

  private expectEnd(): void {
    this.skipSpace();
    if (this.text[this.position] !== '}') this.fail('expected a closing "}"');
    this.position++;
  }

  private fail(reason: string): never {
    if (this.position >= this.text.length) {
      throw new TemplateSyntaxError(
        `unterminated template expression "${this.text.slice(this.start)}"; expected a closing "}"`,
      );
    }
    const end = this.text.indexOf('}', this.position);
    const shown = this.text.slice(this.start, end < 0 ? undefined : end + 1);
    const at = this.text[this.position]!;
    throw new TemplateSyntaxError(
      `invalid template expression "${shown}"; ${reason}, found ${JSON.stringify(at)} at offset ${this.position - this.start}`,
    );
  }

  private enter(): void {
    if (++this.depth > maxDepth) {
      throw new TemplateSyntaxError(
        `template expression nested too deeply (more than ${maxDepth} levels) in "${this.text.slice(this.start, this.start + 40)}…"`,
      );
    }
  }

  private skipSpace(): void {
    while (this.position < this.text.length && spaceCharacter.test(this.text[this.position]!))
      this.position++;
  }

  private peekWord(): string {
    let end = this.position;
    if (!identifierStart.test(this.text[end] ?? '')) return '';
    while (end < this.text.length && identifierPart.test(this.text[end]!)) end++;
    return this.text.slice(this.position, end);
  }

  private eat(token: string): boolean {
    if (this.text.startsWith(token, this.position)) {
      this.position += token.length;
      return true;
    }
    return false;
  }

  parseExpression(): Expression {
    this.enter();
    const test = this.parseOr();
    this.skipSpace();
    let result = test;
    if (this.eat('?')) {
      this.skipSpace();
      const consequent = this.parseExpression();
      this.skipSpace();
      if (!this.eat(':')) this.fail('expected ":" of a "?:" conditional');
      this.skipSpace();
      const alternate = this.parseExpression();
      result = { type: 'conditional', test, consequent, alternate };
    }
    this.depth--;
    return result;
  }

  /** One left-associative level; each operator in a chain counts as a level of nesting. */
  private chain(
    operators: readonly string[],
    operand: () => Expression,
    build: (operator: string, left: Expression, right: Expression) => Expression,
    needsSpace = false,
  ): Expression {
    let left = operand();
    let links = 0;
    for (;;) {
      const save = this.position;
      const spaced = this.skipSpaceCounting();
      const operator = operators.find((op) => this.text.startsWith(op, this.position));
      if (!operator || !this.isOperatorHere(operator) || (needsSpace && !spaced)) {
        this.position = save;
        break;
      }
      this.position += operator.length;
      if (!this.skipSpaceCounting() && needsSpace) {
        const next = this.text[this.position];
        if (next === undefined || next === '}') this.fail(`expected a value after "${operator}"`);
        this.fail(
          `expected a space after "${operator}" (as in "a ${operator} b"; "a${operator}b" is one key)`,
        );
      }
      this.enter();
      links++;
      left = build(operator, left, operand());
    }
    this.depth -= links;
    return left;
  }

  private skipSpaceCounting(): boolean {
    const before = this.position;
    this.skipSpace();
    return this.position > before;
  }

  /** `<` is not `<=`'s start here, `!` not `!=`'s, `contains` is a whole word. */
  private isOperatorHere(operator: string): boolean {
    const after = this.text[this.position + operator.length] ?? '';
    if ((operator === '<' || operator === '>') && after === '=') return false;
    if ((operator === '*' || operator === '/' || operator === '%') && after === '=') return false;
    if (operator === 'contains') return !identifierPart.test(after);
    return true;
  }

  private parseOr(): Expression {
    return this.chain(
      ['||'],
      () => this.parseAnd(),
      (_, left, right) => ({ type: 'or', left, right }),
    );
  }

  private parseAnd(): Expression {
    return this.chain(
      ['&&'],
      () => this.parseEquality(),
      (_, left, right) => ({ type: 'and', left, right }),
    );
  }

  private binary(operators: readonly BinaryOperator[], operand: () => Expression, needsSpace = false) {
    return this.chain(
      operators,
      operand,
      (operator, left, right) => ({ type: 'binary', operator: operator as BinaryOperator, left, right }),
      needsSpace,
    );
  }

  private parseEquality(): Expression {
    return this.binary(['==', '!='], () => this.parseRelational());
  }

  private parseRelational(): Expression {
    return this.binary(['<=', '>=', '<', '>'], () => this.parseAdditive());
  }

  /** Spaces around `+` and `-`, as in Garden: `var.a-b` is one key. */
  private parseAdditive(): Expression {
    return this.binary(['+', '-'], () => this.parseMultiplicative(), true);
  }

  private parseMultiplicative(): Expression {
    return this.binary(['*', '/', '%'], () => this.parseContains());
  }

  private parseContains(): Expression {
    return this.binary(['contains'], () => this.parseUnary());
  }

  private parseUnary(): Expression {
    this.enter();
    let result: Expression;
    if (this.eat('!')) {
      this.skipSpace();
      result = { type: 'not', operand: this.parseUnary() };
    } else if (this.peekWord() === 'typeof') {
      this.position += 'typeof'.length;
      this.skipSpace();
      result = { type: 'typeof', operand: this.parseUnary() };
    } else if (this.text[this.position] === '-' && !/[\s]/.test(this.text[this.position + 1] ?? ' ')) {
      this.position++;
      result = { type: 'negate', operand: this.parseUnary() };
    } else {
      result = this.parsePrimary();
    }
    this.depth--;
    return result;
  }

  private parsePrimary(): Expression {
    const c = this.text[this.position];
    if (c === undefined) this.fail('expected a value');
    if (c === '"' || c === "'") return this.parseString(c);
    if (/[0-9.]/.test(c)) return { type: 'literal', value: this.parseNumber() };
    if (c === '[') return { type: 'array', elements: this.parseList('[', ']') };
    if (c === '(') {
      this.position++;
      this.skipSpace();
      const inner = this.parseExpression();
      this.skipSpace();
      if (!this.eat(')')) this.fail('expected ")"');
      return inner;
    }
    const word = this.peekWord();
    if (!word) this.fail('expected a value (a key, a literal, a function call or "(")');
    if (word === 'true' || word === 'false' || word === 'null') {
      this.position += word.length;
      return { type: 'literal', value: word === 'null' ? null : word === 'true' };
    }
    const begin = this.position;
    this.position += word.length;
    const save = this.position;
    this.skipSpace();
    if (this.text[this.position] === '(') return { type: 'call', name: word, args: this.parseList('(', ')') };
    this.position = save;
    return this.parseLookup(word, begin);
  }

  /** `root.key[expr].key`: no spaces inside, as in Garden. */
  private parseLookup(root: string, begin: number): Expression {
    const path: PathSegment[] = [];
    for (;;) {
      if (this.eat('.')) {
        const key = this.peekWord() || /^[0-9]+/.exec(this.text.slice(this.position))?.[0];
        if (!key) this.fail('expected a key after "."');
        this.position += key.length;
        path.push(key);
      } else if (this.text[this.position] === '[') {
        this.position++;
        this.skipSpace();
        path.push(this.parseExpression());
        this.skipSpace();
        if (!this.eat(']')) this.fail('expected "]"');
      } else {
        break;
      }
    }
    return { type: 'lookup', root, path, text: this.text.slice(begin, this.position) };
  }

  private parseList(open: string, close: string): Expression[] {
    this.enter();
    this.position += open.length;
    const items: Expression[] = [];
    this.skipSpace();
    while (!this.eat(close)) {
      items.push(this.parseExpression());
      this.skipSpace();
      if (this.eat(',')) {
        this.skipSpace();
      } else if (this.text[this.position] !== close) {
        this.fail(`expected "," or "${close}"`);
      }
    }
    this.depth--;
    return items;
  }

  private parseNumber(): number {
    const rest = this.text.slice(this.position);
    const match = /^(0[xX][0-9a-fA-F]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)/.exec(rest);
    if (!match) this.fail('expected a number');
    const literal = match[0];
    this.position += literal.length;
    if (identifierPart.test(this.text[this.position] ?? '')) this.fail('expected a number');
    const value = /^0x/i.test(literal) ? parseInt(literal.slice(2), 16) : Number(literal);
    if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) {
      throw new TemplateSyntaxError(
        `number ${literal.length > 30 ? `${literal.slice(0, 30)}…` : literal} is too large; ` +
          `numbers in templates go up to ${Number.MAX_SAFE_INTEGER}`,
      );
    }
    return value;
  }

  private parseString(quote: string): Expression {
    this.position++;
    let value = '';
    for (;;) {
      const c = this.text[this.position];
      if (c === undefined || c === '\n' || c === '\r') this.fail(`expected a closing ${quote} of a string`);
      this.position++;
      if (c === quote) break;
      if (c === '\\') value += this.parseEscape();
      else value += c;
    }
    // A string literal may hold a template of its own (Garden's nested templates).
    if (value.includes('${')) return { type: 'template', template: parseTemplateString(value, this.options) };
    return { type: 'literal', value };
  }

  private parseEscape(): string {
    const c = this.text[this.position++];
    const simple: Record<string, string> = {
      b: '\b',
      f: '\f',
      n: '\n',
      r: '\r',
      t: '\t',
      v: '\v',
      '0': '\0',
    };
    if (c === undefined) this.fail('expected an escape sequence');
    if (c === '\n') return '';
    if (c in simple && !(c === '0' && /[0-9]/.test(this.text[this.position] ?? ''))) return simple[c]!;
    const hex = c === 'x' ? 2 : c === 'u' ? 4 : 0;
    if (hex > 0) {
      const digits = this.text.slice(this.position, this.position + hex);
      if (!new RegExp(`^[0-9a-fA-F]{${hex}}$`).test(digits))
        this.fail(`expected ${hex} hex digits after \\${c}`);
      this.position += hex;
      return String.fromCharCode(parseInt(digits, 16));
    }
    return c;
  }
}
