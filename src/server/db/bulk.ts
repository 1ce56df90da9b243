/**
 * Bulk SQL for both databases: multi-row inserts and upserts, and `in (…)` reads, for the hot
 * path of ingest. It writes SQL text directly: building thousands of values through the query
 * builder costs more than the database does. Values are always parameters: on SQLite as
 * `VALUES (?, …), …` (prepared once per shape, see database.ts), on PostgreSQL as one array per
 * column (`unnest($1::text[], …)`, `= any($1::text[])`), so the server parses a short statement
 * instead of one with thousands of parameters.
 */
import { CompiledQuery, type Transaction } from 'kysely';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

/**
 * `list` in runs of at most `size`: the rows or `IN (…)` values one statement takes, well under
 * SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
 */
export function chunks<T>(list: readonly T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

export interface InsertStatement {
  table: string;
  columns: readonly string[];
  /** PostgreSQL type of columns that are not text. */
  types?: Readonly<Record<string, string>>;
  /** `on conflict …` */
  tail: string;
}

/** Most values per statement on SQLite (it allows 32,766 parameters). */
const maxSqliteParameters = 30_000;
/** Most rows per statement on PostgreSQL (arrays; bounded to keep one statement's work small). */
const maxPostgresRows = 5_000;

/** Characters JSON.stringify escapes differently from a PostgreSQL array literal. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const jsonOnlyEscapes = /[\u0000-\u001f\ud800-\udfff]/;

/**
 * A PostgreSQL array literal (`{"a","b",NULL,3}`) of text, integer or null values, for a
 * `$n::text[]` parameter. node-pg would build it element by element with two regular
 * expressions each, the largest allocation of a batch; inside double quotes an array literal
 * escapes only `"` and `\`, as JSON does, so one JSON.stringify of the column is the literal
 * (JSON's `null` reads as NULL) unless a string holds a character JSON escapes as `\n` or `\uXXXX`.
 */
export function postgresArray(values: readonly unknown[]): string {
  if (values.some((v) => typeof v === 'string' && jsonOnlyEscapes.test(v))) {
    return `{${values
      .map((v) => (v === null || v === undefined ? 'NULL' : `"${String(v).replace(/["\\]/g, '\\$&')}"`))
      .join(',')}}`;
  }
  return `{${JSON.stringify(values).slice(1, -1)}}`;
}

/** Compares by a string key (code-unit order): rows written in key order lock alike in concurrent batches. */
export const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };

/** `a = excluded.a, b = excluded.b`: the update part of an upsert. */
export const updateFromExcluded = (columns: string[]) =>
  columns.map((c) => `${c} = excluded.${c}`).join(', ');

/** The statements of one transaction; statement texts are cached by shape. */
export class BulkStatements {
  private readonly textCache = new Map<string, string>();
  constructor(
    readonly trx: Transaction<Database>,
    readonly dialect: DialectName,
  ) {}

  private cached(key: string, make: () => string): string {
    let text = this.textCache.get(key);
    if (text === undefined) {
      text = make();
      if (this.textCache.size < 64) this.textCache.set(key, text);
    }
    return text;
  }

  /** SQLite: `(?, ?), (?, ?)`: `rows` tuples of `width` placeholders. */
  tuples(rows: number, width: number): string {
    return this.cached(`${rows}/${width}`, () => {
      const tuple = `(${'?, '.repeat(width - 1)}?)`;
      return Array.from({ length: rows }, () => tuple).join(', ');
    });
  }

  async query<R>(text: string, parameters: readonly unknown[]): Promise<R[]> {
    return (await this.trx.executeQuery<R>(CompiledQuery.raw(text, [...parameters]))).rows;
  }

  /**
   * Rows of `select <columns> from <table> where <column> in (…values) <tail>` (in slices on
   * SQLite; a `group by` in `tail` groups within a slice, so group by `column`).
   */
  async selectIn<R>(
    columns: string,
    table: string,
    column: string,
    values: string[],
    tail = '',
  ): Promise<R[]> {
    if (values.length === 0) return [];
    if (this.dialect === 'postgres') {
      return this.query<R>(`select ${columns} from ${table} where ${column} = any($1::text[]) ${tail}`, [
        postgresArray(values),
      ]);
    }
    const out: R[] = [];
    for (let i = 0; i < values.length; i += 1000) {
      const slice = values.slice(i, i + 1000);
      const text = `select ${columns} from ${table} where ${column} in (${this.tuples(1, slice.length).slice(1, -1)}) ${tail}`;
      out.push(...(await this.query<R>(text, slice)));
    }
    return out;
  }

  /**
   * Several multi-row inserts, in order; how many rows each inserted or updated. On PostgreSQL
   * one statement (each insert a data-modifying `WITH` part; foreign keys are checked at the end
   * of the statement), one round trip instead of one per table.
   */
  async insertAll(parts: [InsertStatement, unknown[][]][]): Promise<number[]> {
    if (this.dialect !== 'postgres' || parts.some(([, rows]) => rows.length > maxPostgresRows)) {
      const affected: number[] = [];
      for (const [statement, rows] of parts)
        affected.push(rows.length > 0 ? await this.insert(statement, rows) : 0);
      return affected;
    }
    const used = parts.flatMap(([, rows], i) => (rows.length > 0 ? [i] : []));
    if (used.length === 0) return parts.map(() => 0);
    let n = 0;
    const withParts = used.map((i) => `w${i} as (${this.unnestInsert(parts[i]![0], () => ++n)} returning 1)`);
    const [counts] = await this.query<Record<string, number>>(
      `with ${withParts.join(', ')} select ${used.map((i) => `(select count(*) from w${i}) as w${i}`).join(', ')}`,
      used.flatMap((i) => {
        const [statement, rows] = parts[i]!;
        return statement.columns.map((_, c) => postgresArray(rows.map((row) => row[c])));
      }),
    );
    return parts.map((_, i) => Number(counts?.[`w${i}`] ?? 0));
  }

  /** `insert into t (a, b) select * from unnest($1::text[], $2::integer[]) <tail>`. */
  private unnestInsert(statement: InsertStatement, parameter: () => number): string {
    return (
      `insert into ${statement.table} (${statement.columns.join(', ')}) select * from unnest(` +
      statement.columns.map((c) => `$${parameter()}::${statement.types?.[c] ?? 'text'}[]`).join(', ') +
      `) ${statement.tail}`
    );
  }

  /** A multi-row insert, in slices; how many rows it inserted or updated. */
  async insert(statement: InsertStatement, rows: unknown[][]): Promise<number> {
    let affected = 0;
    const run = async (text: string, parameters: unknown[]) => {
      const result = await this.trx.executeQuery(CompiledQuery.raw(text, parameters));
      affected += Number(result.numAffectedRows ?? 0);
    };
    const head = `insert into ${statement.table} (${statement.columns.join(', ')})`;
    if (this.dialect === 'postgres') {
      let n = 0;
      const text = this.cached(head, () => this.unnestInsert(statement, () => ++n));
      for (let i = 0; i < rows.length; i += maxPostgresRows) {
        const slice = rows.slice(i, i + maxPostgresRows);
        await run(
          text,
          statement.columns.map((_, c) => postgresArray(slice.map((row) => row[c]))),
        );
      }
      return affected;
    }
    const width = statement.columns.length;
    const perStatement = Math.max(1, Math.floor(maxSqliteParameters / width));
    for (let i = 0; i < rows.length; i += perStatement) {
      const slice = rows.slice(i, i + perStatement);
      // The rows' values in one array: a loop, five times faster than `flat()` (about 1 ms a batch of 500).
      const values: unknown[] = [];
      for (const row of slice) for (const value of row) values.push(value);
      await run(`${head} values ${this.tuples(slice.length, width)} ${statement.tail}`, values);
    }
    return affected;
  }
}
