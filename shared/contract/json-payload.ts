// The PARSE_JSON stage (bytes to a JSON value) and reading the contract fields exactly: numbers, duplicate keys.
import { LosslessNumber, parse as parseLossless } from 'lossless-json';

import { CONTRACT_FIELD_NAMES, isContractField, type ContractField } from './fields';
import { failWith, type Ok, type ValidationFailure } from './stages';

/**
 * Deepest nesting of objects and arrays accepted, the top-level value being depth 1 (BigQuery limit: the JSON
 * type's nesting limit is 500). It also bounds lossless-json's recursion, which overflows the stack.
 */
export const MAX_NESTING_DEPTH = 500;

/** Strict decoder: invalid UTF-8 is an error, not U+FFFD (team decision); it drops one leading BOM itself. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

const BYTE_ORDER_MARK = '\uFEFF';
const JSON_WHITESPACE_ONLY = /^[ \t\n\r]*$/;
const JSON_WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);
const CHAR_QUOTE = 0x22;
const CHAR_BACKSLASH = 0x5c;
const CHAR_COLON = 0x3a;
const CHAR_OPEN_BRACE = 0x7b;
const CHAR_CLOSE_BRACE = 0x7d;
const CHAR_OPEN_BRACKET = 0x5b;
const CHAR_CLOSE_BRACKET = 0x5d;
const POSITION_SUFFIX = / at position (\d+)$/;
const V8_POSITION = / in JSON at position (\d+)/;

/**
 * Decodes message bytes as UTF-8, or takes a string as is; one leading BOM is dropped (RFC 8259 §8.1). Invalid
 * UTF-8 is a PARSE_JSON failure, "payload is not valid UTF-8" (team decision: replacing it corrupts identifiers).
 */
export function decodePayload(payload: Uint8Array | string): Ok<string> | ValidationFailure {
  if (typeof payload === 'string') {
    return { ok: true, value: payload.startsWith(BYTE_ORDER_MARK) ? payload.slice(1) : payload };
  }
  try {
    return { ok: true, value: UTF8.decode(payload) };
  } catch (error: unknown) {
    if (!(error instanceof TypeError)) throw error;
    return failWith('PARSE_JSON', [
      { field: null, kind: 'invalid_utf8', message: 'payload is not valid UTF-8' },
    ]);
  }
}

/**
 * Parses JSON text with JSON.parse (lab: `json.loads`). Failures are PARSE_JSON: "payload is empty"; "Invalid JSON:
 * <what>: line L column C (char P)" (P in UTF-16 code units, like the lab's Python message); "nesting too deep"
 * beyond {@link MAX_NESTING_DEPTH} levels.
 */
export function parseJsonPayload(text: string): Ok<unknown> | ValidationFailure {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error: unknown) {
    if (!(error instanceof SyntaxError)) throw error;
    return invalidJson(text, error.message);
  }
  if (typeof value === 'object' && value !== null && nestingExceeds(value, MAX_NESTING_DEPTH)) {
    return failWith('PARSE_JSON', [
      {
        field: null,
        kind: 'too_deep',
        message: `nesting too deep: more than ${MAX_NESTING_DEPTH} levels of objects and arrays`,
      },
    ]);
  }
  return { ok: true, value };
}

/**
 * The contract fields of a parsed top-level object as the schema expects them (own properties, JSON numbers as
 * `LosslessNumber`), and the contract keys that occur more than once with different values. Re-parses with
 * lossless-json only for a numeric contract value or a duplicated key. `text` must be the text `object` was parsed
 * from, and within {@link MAX_NESTING_DEPTH}.
 */
export function readContractFields(
  text: string,
  object: Record<string, unknown>,
): { fields: ContractFields; duplicateKeys: ContractField[] } {
  const fields = pickContractFields(object);
  let hasNumber = false;
  for (const key of CONTRACT_FIELD_NAMES) if (typeof fields[key] === 'number') hasNumber = true;
  if (!hasNumber && countTopLevelKeys(text) === Object.keys(object).length) {
    return { fields, duplicateKeys: [] };
  }
  const lossless = parseLosslessObject(text);
  if (lossless === undefined) return { fields, duplicateKeys: [] };
  const losslessFields = pickContractFields(lossless);
  const duplicateKeys: ContractField[] = [];
  for (const key of CONTRACT_FIELD_NAMES) {
    const value = losslessFields[key];
    if (value instanceof DuplicateKey) {
      duplicateKeys.push(key);
      losslessFields[key] = value.last;
    }
  }
  return { fields: losslessFields, duplicateKeys };
}

/** The contract fields of a payload object, as the schema's input: absent keys are absent, not undefined. */
export type ContractFields = Partial<Record<ContractField, unknown>>;

function pickContractFields(object: Record<string, unknown>): ContractFields {
  const fields = new ContractFieldRecord() as ContractFields;
  for (const key of CONTRACT_FIELD_NAMES) if (Object.hasOwn(object, key)) fields[key] = object[key];
  return fields;
}

/**
 * The schema's input record: valibot tests presence with `in`, so its prototype chain ends in null and nothing of
 * Object.prototype is visible (unlike Object.create(null), instances stay fast in V8).
 */
class ContractFieldRecord {}
Object.setPrototypeOf(ContractFieldRecord.prototype, null);

/**
 * The top-level keys the contract does not know (schema drift), with their values read exactly: when any of
 * them holds a JSON number (at any depth), every number of those values is a `LosslessNumber` carrying its source
 * text (lossless-json re-parse); otherwise the values are JSON.parse's. Duplicate keys resolve last-wins. A
 * `__proto__` key becomes an ordinary own property. `text` must be the text `object` was parsed from, and within
 * {@link MAX_NESTING_DEPTH}.
 */
export function collectExtraFields(
  text: string,
  object: Record<string, unknown>,
): Record<string, unknown> {
  const extra = extraFieldsOf(object);
  if (!Object.values(extra).some(containsNumber)) return extra;
  let lossless: unknown;
  try {
    lossless = parseLastWins(text);
  } catch (error: unknown) {
    // Defensive only (the text passed JSON.parse); not swallowed, as JSON.parse's values would round big integers.
    throw new Error(`lossless re-parse of a valid JSON text failed: ${String(error)}`, {
      cause: error,
    });
  }
  if (!isPlainObject(lossless)) throw new Error('lossless re-parse gave no top-level object');
  return extraFieldsOf(lossless);
}

function extraFieldsOf(object: Record<string, unknown>): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const key of Object.keys(object)) {
    if (!isContractField(key)) defineField(extra, key, object[key]);
  }
  return extra;
}

/**
 * Sets `target[key] = value` as an own, enumerable, writable data property: assigning a field named `__proto__`
 * would set the prototype and drop the value.
 */
export function defineField(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** Whether a JSON.parse value is or holds a number; iterative, so any depth is safe. */
function containsNumber(root: unknown): boolean {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'number') return true;
    if (typeof value === 'object' && value !== null) {
      for (const child of Array.isArray(value) ? value : Object.values(value)) pending.push(child);
    }
  }
  return false;
}

/**
 * How many keys the top-level object of a valid JSON text has, duplicates included. One pass tracking only strings
 * and brackets (the syntax is already valid); string bodies are skipped with native `indexOf` (twice as fast).
 */
function countTopLevelKeys(text: string): number {
  let count = 0;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === CHAR_OPEN_BRACE || code === CHAR_OPEN_BRACKET) depth++;
    else if (code === CHAR_CLOSE_BRACE || code === CHAR_CLOSE_BRACKET) depth--;
    else if (code === CHAR_QUOTE) {
      i = closingQuote(text, i);
      if (i === -1) break;
      // At depth 1 a string is a key exactly when a ':' follows it (else it is a value).
      if (depth === 1 && text.charCodeAt(skipWhitespace(text, i + 1)) === CHAR_COLON) count++;
    }
  }
  return count;
}

/** The index of the quote closing the string opened at `open` (-1 if unterminated): the next unescaped '"'. */
function closingQuote(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (close !== -1 && isEscaped(text, close)) close = text.indexOf('"', close + 1);
  return close;
}

/** Whether the character at `index` follows an odd run of backslashes. */
function isEscaped(text: string, index: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(index - 1 - backslashes) === CHAR_BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/** The index of the first character from `from` on that is not JSON whitespace. */
function skipWhitespace(text: string, from: number): number {
  let i = from;
  while (JSON_WHITESPACE.has(text.charCodeAt(i))) i++;
  return i;
}

/** Marks a key seen more than once with different values; `last` is the value JSON.parse would keep. */
class DuplicateKey {
  constructor(readonly last: unknown) {}
}

/**
 * lossless-json's parse of a text JSON.parse accepted, with duplicate contract keys marked by
 * {@link DuplicateKey} (only top-level markers are read) and other duplicates resolved last-wins. Undefined if the
 * parsers ever disagree: the caller keeps JSON.parse's view, a visible schema rejection rather than a throw.
 */
function parseLosslessObject(text: string): Record<string, unknown> | undefined {
  let parsed: unknown;
  try {
    parsed = parseLossless(text, null, {
      onDuplicateKey: ({ key, newValue }) =>
        isContractField(key) ? new DuplicateKey(newValue) : newValue,
    });
  } catch (error: unknown) {
    // Defensive only: the text passed JSON.parse and is within MAX_NESTING_DEPTH.
    if (!(error instanceof Error)) throw error;
    return undefined;
  }
  return isPlainObject(parsed) ? parsed : undefined;
}

/** lossless-json's parse with duplicate keys resolved last-wins, as JSON.parse does. */
function parseLastWins(text: string): unknown {
  return parseLossless(text, null, { onDuplicateKey: ({ newValue }) => newValue });
}

/** Whether a JSON value is an object (not an array, not null, not a lossless-json number). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof LosslessNumber)
  );
}

/** Whether a parsed JSON value nests objects/arrays deeper than `maxDepth`; iterative, so any depth is safe. */
function nestingExceeds(root: object, maxDepth: number): boolean {
  const pending: { node: object; depth: number }[] = [{ node: root, depth: 1 }];
  for (let entry = pending.pop(); entry !== undefined; entry = pending.pop()) {
    const children: unknown[] = Array.isArray(entry.node) ? entry.node : Object.values(entry.node);
    for (const child of children) {
      if (typeof child !== 'object' || child === null) continue;
      if (entry.depth + 1 > maxDepth) return true;
      pending.push({ node: child, depth: entry.depth + 1 });
    }
  }
  return false;
}

/**
 * The PARSE_JSON failure for text JSON.parse rejected, located by lossless-json (its messages end "at position
 * N"), else by V8's message when that has a position, else V8's message as is.
 */
function invalidJson(text: string, v8Message: string): ValidationFailure {
  if (JSON_WHITESPACE_ONLY.test(text)) {
    return failWith('PARSE_JSON', [
      { field: null, kind: 'empty_payload', message: 'payload is empty' },
    ]);
  }
  const located = locateSyntaxError(text) ?? locateV8Message(text, v8Message);
  const message =
    located === undefined
      ? `Invalid JSON: ${v8Message}`
      : `Invalid JSON: ${located.what}: ${lineAndColumn(text, located.position)}`;
  return failWith('PARSE_JSON', [{ field: null, kind: 'invalid_json', message }]);
}

function locateSyntaxError(text: string): { what: string; position: number } | undefined {
  try {
    parseLastWins(text);
  } catch (error: unknown) {
    // Only a SyntaxError describes the text (a RangeError is deep nesting).
    if (!(error instanceof SyntaxError)) return undefined;
    const match = POSITION_SUFFIX.exec(error.message);
    if (match === null) return undefined;
    return { what: error.message.slice(0, match.index), position: Number(match[1]) };
  }
  return undefined;
}

function locateV8Message(
  text: string,
  message: string,
): { what: string; position: number } | undefined {
  const match = V8_POSITION.exec(message);
  if (match !== null) return { what: message.replace(V8_POSITION, ''), position: Number(match[1]) };
  if (message === 'Unexpected end of JSON input') return { what: message, position: text.length };
  return undefined;
}

/** Python's json error suffix: "line L column C (char P)", 1-based line and column. */
function lineAndColumn(text: string, position: number): string {
  const before = text.slice(0, position);
  const lastNewline = before.lastIndexOf('\n');
  let line = 1;
  for (let i = before.indexOf('\n'); i !== -1; i = before.indexOf('\n', i + 1)) line++;
  return `line ${line} column ${position - lastNewline} (char ${position})`;
}
