// Reads the column lists of CREATE TABLE statements and the ADD COLUMN statements of sql/-style DDL, for the
// upgrade test (a lab table must get every column sql/ adds). Only what our files use: backquoted names, one
// column per line or comma-separated, OPTIONS (…) with quoted text that may hold commas and parentheses.

/** A column of a CREATE TABLE. */
export interface DdlColumn {
  readonly name: string;
  /** The type word, upper case: STRING, INT64, JSON, … */
  readonly type: string;
  readonly notNull: boolean;
}

/** A CREATE TABLE statement: `dataset.table`, its columns, and where it starts in the text. */
export interface CreatedTable {
  readonly table: string;
  readonly columns: readonly DdlColumn[];
  readonly offset: number;
}

/** An `ALTER TABLE … ADD COLUMN …` statement. */
export interface AddedColumns {
  readonly table: string;
  /** Every column the statement adds (our rule: exactly one). */
  readonly columns: readonly DdlColumn[];
  readonly ifNotExists: boolean;
  readonly offset: number;
}

/** Drops `-- …` comments, keeping offsets (replaced by spaces) and quoted text. */
function stripComments(sql: string): string {
  return sql.replace(/--[^\n]*/g, (c) => ' '.repeat(c.length));
}

/**
 * Walks `text` from `from`, passing over quoted strings (backslash escapes included), and calls `visit` at each comma
 * and parenthesis outside them with its index and the nesting depth after it. Stops at the first `true` from `visit`.
 * @returns the index `visit` stopped at, or -1 at the end of the text
 */
function scanOutsideQuotes(
  text: string,
  from: number,
  visit: (i: number, c: string, depth: number) => boolean,
): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = from; i < text.length; i += 1) {
    const c = text[i] ?? '';
    if (quote !== undefined) {
      if (c === '\\') i += 1;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '(' || c === ')' || c === ',') {
      depth += c === '(' ? 1 : c === ')' ? -1 : 0;
      if (visit(i, c, depth)) return i;
    }
  }
  return -1;
}

/** Splits `text` at top-level commas (outside parentheses and quotes). */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let start = 0;
  scanOutsideQuotes(text, 0, (i, c, depth) => {
    if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
    return false;
  });
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** The text between the `(` at `open` and its matching `)`. @throws Error when unbalanced. */
function parenthesised(text: string, open: number): string {
  const close = scanOutsideQuotes(text, open, (_i, c, depth) => c === ')' && depth === 0);
  if (close < 0) throw new Error(`unbalanced parenthesis at offset ${open}`);
  return text.slice(open + 1, close);
}

/** `name TYPE [NOT NULL] [OPTIONS (…)]` → a column. @throws Error for anything else. */
function parseColumn(definition: string): DdlColumn {
  const match = /^`?([A-Za-z_][A-Za-z0-9_]*)`?\s+([A-Za-z0-9_]+)(\s+NOT\s+NULL)?\b/i.exec(
    definition,
  );
  if (match === null) throw new Error(`not a column definition: ${definition}`);
  return {
    name: match[1] ?? '',
    type: (match[2] ?? '').toUpperCase(),
    notNull: match[3] !== undefined,
  };
}

/** `project.dataset.table` → `dataset.table`. */
function tableOf(qualified: string): string {
  return qualified.split('.').slice(-2).join('.');
}

/** Every CREATE TABLE of `sql` with its columns, in text order. */
export function createdTables(sql: string): CreatedTable[] {
  const text = stripComments(sql);
  const out: CreatedTable[] = [];
  for (const m of text.matchAll(
    /CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`([^`]+)`\s*\(/gi,
  )) {
    const open = m.index + m[0].length - 1;
    out.push({
      table: tableOf(m[1] ?? ''),
      columns: splitTopLevel(parenthesised(text, open)).map(parseColumn),
      offset: m.index,
    });
  }
  return out;
}

/** Every `ALTER TABLE … ADD COLUMN …;` of `sql`, in text order. */
export function addedColumns(sql: string): AddedColumns[] {
  const text = stripComments(sql);
  const out: AddedColumns[] = [];
  for (const m of text.matchAll(/ALTER\s+TABLE\s+`([^`]+)`\s+(ADD\s+COLUMN[^;]*);/gi)) {
    const clauses = splitTopLevel(m[2] ?? '');
    const parsed = clauses.map((c) => {
      const add = /^ADD\s+COLUMN\s+(IF\s+NOT\s+EXISTS\s+)?([\s\S]*)$/i.exec(c);
      if (add === null) throw new Error(`not an ADD COLUMN clause: ${c}`);
      return { ifNotExists: add[1] !== undefined, column: parseColumn(add[2] ?? '') };
    });
    out.push({
      table: tableOf(m[1] ?? ''),
      columns: parsed.map((p) => p.column),
      ifNotExists: parsed.every((p) => p.ifNotExists),
      offset: m.index,
    });
  }
  return out;
}
