// BigQuery column-name rules and the project's reserved names, as per-name verdicts with a clear reason.

/**
 * Longest column name BigQuery accepts, in characters.
 * Source: https://cloud.google.com/bigquery/docs/schemas#column_names
 */
export const MAX_COLUMN_NAME_LENGTH = 300;

/**
 * Most columns a BigQuery table can have (nested columns count). Source: BigQuery quotas and limits,
 * "Maximum number of columns per table" (https://cloud.google.com/bigquery/quotas#table_limits).
 */
export const MAX_COLUMNS_PER_TABLE = 10_000;

/**
 * Prefixes BigQuery reserves for column names, compared case-insensitively.
 * Source: https://cloud.google.com/bigquery/docs/schemas#column_names
 */
export const RESERVED_COLUMN_PREFIXES: readonly string[] = [
  '_TABLE_',
  '_FILE_',
  '_PARTITION',
  '_ROW_TIMESTAMP',
  '__ROOT__',
  '_COLON_',
];

/**
 * GoogleSQL reserved keywords (https://cloud.google.com/bigquery/docs/reference/standard-sql/lexical#reserved_keywords),
 * plus TABLE, INCLUDE, PIVOT and UNPIVOT. Rejected by project policy (BigQuery accepts them quoted), so no drift
 * column forces every downstream query to quote it.
 */
export const RESERVED_KEYWORDS: ReadonlySet<string> = new Set(
  (
    'ALL AND ANY ARRAY AS ASC ASSERT_ROWS_MODIFIED AT BETWEEN BY CASE CAST COLLATE CONTAINS CREATE CROSS CUBE ' +
    'CURRENT DEFAULT DEFINE DESC DISTINCT ELSE END ENUM ESCAPE EXCEPT EXCLUDE EXISTS EXTRACT FALSE FETCH ' +
    'FOLLOWING FOR FROM FULL GROUP GROUPING GROUPS HASH HAVING IF IGNORE IN INCLUDE INNER INTERSECT INTERVAL ' +
    'INTO IS JOIN LATERAL LEFT LIKE LIMIT LOOKUP MERGE NATURAL NEW NO NOT NULL NULLS OF ON OR ORDER OUTER OVER ' +
    'PARTITION PIVOT PRECEDING PROTO QUALIFY RANGE RECURSIVE RESPECT RIGHT ROLLUP ROWS SELECT SET SOME STRUCT ' +
    'TABLE TABLESAMPLE THEN TO TREAT TRUE UNBOUNDED UNION UNNEST UNPIVOT USING WHEN WHERE WINDOW WITH WITHIN'
  ).split(' '),
);

/**
 * Names special to JavaScript objects, case-folded (team decision, treated like reserved keywords): every own
 * property of `Object.prototype` and `prototype`. As a plain-object key such a name reads or replaces inherited
 * behaviour, so every JavaScript reader of the table would have to special-case the column. Compared
 * case-insensitively, as BigQuery compares column names.
 */
export const JS_SPECIAL_NAMES: ReadonlySet<string> = new Set(
  [
    '__proto__',
    '__defineGetter__',
    '__defineSetter__',
    '__lookupGetter__',
    '__lookupSetter__',
    'constructor',
    'hasOwnProperty',
    'isPrototypeOf',
    'propertyIsEnumerable',
    'prototype',
    'toLocaleString',
    'toString',
    'valueOf',
  ].map((name) => name.toLowerCase()),
);

/**
 * The classic BigQuery column-name alphabet: letters, digits, underscores, not starting with a digit. Flexible
 * column names are not accepted (they need quoting in every query).
 * Source: https://cloud.google.com/bigquery/docs/schemas#column_names (and #flexible-column-names).
 */
export const COLUMN_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why a name cannot be a column. */
export type NameRejectionCode =
  | 'EMPTY_NAME'
  | 'NAME_TOO_LONG'
  | 'ILLEGAL_CHARACTERS'
  | 'RESERVED_PREFIX'
  | 'RESERVED_KEYWORD'
  | 'JS_SPECIAL_NAME';

/** The verdict on one name. */
export type NameCheck =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /** Machine-readable cause. */
      readonly code: NameRejectionCode;
      /** Human-readable cause, naming the rule. */
      readonly reason: string;
    };

/**
 * The case-folded form BigQuery compares column names by (ASCII letters lowered; valid names are ASCII).
 * Two names with the same key are the same column to BigQuery.
 */
export function columnNameKey(name: string): string {
  return name.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** A name for a message: JSON-quoted (control characters escaped) and cut at 64 characters. */
export function describeName(name: string): string {
  return name.length > 64
    ? `${JSON.stringify(name.slice(0, 64))}… (${name.length} chars)`
    : JSON.stringify(name);
}

/**
 * Checks a proposed column name against BigQuery's column-name rules and the project's reserved words, in this
 * order: empty; longer than `MAX_COLUMN_NAME_LENGTH`; characters outside `COLUMN_NAME_PATTERN`; a
 * `RESERVED_COLUMN_PREFIXES` prefix; a `RESERVED_KEYWORDS` word; a `JS_SPECIAL_NAMES` name. Case-insensitive
 * where BigQuery is.
 * Does not check collisions: those depend on the table and the configuration (see `planSchemaChange`).
 */
export function checkColumnName(name: string): NameCheck {
  const fail = (code: NameRejectionCode, reason: string): NameCheck => ({
    ok: false,
    code,
    reason,
  });
  const quoted = describeName(name);
  if (name.length === 0) return fail('EMPTY_NAME', 'empty column name');
  if (name.length > MAX_COLUMN_NAME_LENGTH) {
    return fail(
      'NAME_TOO_LONG',
      `column name ${quoted} is longer than BigQuery's ${MAX_COLUMN_NAME_LENGTH} characters`,
    );
  }
  if (!COLUMN_NAME_PATTERN.test(name)) {
    const bad = /^[0-9]/.test(name)
      ? name.charAt(0)
      : ([...name].find((c) => !/[A-Za-z0-9_]/.test(c)) ?? '');
    const codePoint = (bad.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
    return fail(
      'ILLEGAL_CHARACTERS',
      `column name ${quoted} has ${JSON.stringify(bad)} (U+${codePoint}) where only letters, ` +
        'digits and underscores are allowed, starting with a letter or underscore',
    );
  }
  const upper = name.toUpperCase();
  const prefix = RESERVED_COLUMN_PREFIXES.find((p) => upper.startsWith(p));
  if (prefix !== undefined) {
    return fail(
      'RESERVED_PREFIX',
      `column name ${quoted} starts with ${prefix}, a prefix BigQuery reserves`,
    );
  }
  if (RESERVED_KEYWORDS.has(upper)) {
    return fail('RESERVED_KEYWORD', `column name ${quoted} is a GoogleSQL reserved keyword`);
  }
  if (JS_SPECIAL_NAMES.has(name.toLowerCase())) {
    return fail(
      'JS_SPECIAL_NAME',
      `column name ${quoted} is special to JavaScript objects (a property of Object.prototype)`,
    );
  }
  return { ok: true };
}
