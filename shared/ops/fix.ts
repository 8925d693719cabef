// Fixes an operator applies to a quarantined payload or a bad-data row before it is re-driven: built-in field edits
// and a user module (payload → fixed payload, or null to skip, like a Dataflow UDF).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  isSafeNumber,
  LosslessNumber,
  parse as losslessParse,
  stringify as losslessStringify,
} from 'lossless-json';
import { defineField, isPlainObject } from '../contract/json-payload';
import { UsageError } from './errors';

/** One built-in edit of a top-level field of a JSON object. */
export type FieldEdit =
  | { readonly kind: 'set'; readonly field: string; readonly value: unknown }
  | { readonly kind: 'upper'; readonly field: string }
  | { readonly kind: 'rename'; readonly field: string; readonly to: string }
  | { readonly kind: 'drop'; readonly field: string };

/** Where a fixed row came from: the message id, the failing stage or target table, and the reason or error. */
export interface FixInput {
  readonly messageId: string;
  readonly where: string;
  readonly reason: string;
}

/**
 * A user fix (a module's `default` or `fix`, maybe async): the payload (JSON with exact numbers as `LosslessNumber`s,
 * or the text when not JSON) → the fixed payload (object, or text sent as is), or `null`/`undefined` to skip the row.
 */
export type FixFunction = (payload: unknown, input: FixInput) => unknown;

/** A fix: edits in the order rename, set, upper, drop, then the module; `description` for outputs and resolutions. */
export interface Fix {
  readonly edits: readonly FieldEdit[];
  readonly module?: FixFunction;
  readonly description: string;
}

/** The result of a fix on one payload. */
export type FixResult =
  | { readonly kind: 'fixed'; readonly payload: unknown }
  | { readonly kind: 'skipped'; readonly reason: string };

// Any JSON key but an empty one or one with '=' (the separator of --set and --rename): the names BigQuery refuses,
// such as `loyalty-tier` or `bad col`, are the ones these edits exist for.
const FIELD = /^[^=]{1,300}$/;

function field(text: string, flag: string): string {
  if (!FIELD.test(text))
    throw new UsageError(`${flag}: expected a field name, got ${JSON.stringify(text)}`);
  return text;
}

function pair(text: string, flag: string): [string, string] {
  const at = text.indexOf('=');
  if (at <= 0) throw new UsageError(`${flag}: expected FIELD=VALUE, got ${JSON.stringify(text)}`);
  return [field(text.slice(0, at), flag), text.slice(at + 1)];
}

/**
 * JSON text → value keeping every digit: numbers a JS number cannot hold exactly stay `LosslessNumber`s.
 * @throws SyntaxError when the text is not JSON.
 */
export function parseJson(text: string): unknown {
  return losslessParse(text, null, (n) => (isSafeNumber(n) ? Number(n) : new LosslessNumber(n)));
}

/** Value → JSON text, writing `LosslessNumber`s digit for digit. */
export function stringifyJson(value: unknown): string {
  return losslessStringify(value) ?? 'null';
}

/**
 * The JSON value of `text` (numbers exact) when it parses, else the text itself: a `--set` value such as `5`, `"x"` or
 * a bare word (JFK), or a payload given to a fix (a payload that is not JSON gets its text, to repair).
 */
export function jsonOrText(text: string): unknown {
  try {
    return parseJson(text);
  } catch {
    return text;
  }
}

/** The flags a fix is made of, as commander collects them (repeatable flags as arrays). */
export interface FixFlags {
  readonly set?: readonly string[];
  readonly upper?: readonly string[];
  readonly rename?: readonly string[];
  readonly drop?: readonly string[];
  readonly fixModule?: string;
}

/** The built-in edits of `--rename a=b`, `--set f=v`, `--upper f`, `--drop f`. @throws UsageError for a bad value. */
export function parseEdits(flags: FixFlags): FieldEdit[] {
  const edits: FieldEdit[] = [];
  for (const r of flags.rename ?? []) {
    const [from, to] = pair(r, '--rename');
    edits.push({ kind: 'rename', field: from, to: field(to, '--rename') });
  }
  for (const s of flags.set ?? []) {
    const [name, value] = pair(s, '--set');
    edits.push({ kind: 'set', field: name, value: jsonOrText(value) });
  }
  for (const u of flags.upper ?? []) edits.push({ kind: 'upper', field: field(u, '--upper') });
  for (const d of flags.drop ?? []) edits.push({ kind: 'drop', field: field(d, '--drop') });
  return edits;
}

function describeEdit(edit: FieldEdit): string {
  if (edit.kind === 'set') return `set ${edit.field}=${JSON.stringify(edit.value)}`;
  return edit.kind === 'rename' ? `rename ${edit.field}=${edit.to}` : `${edit.kind} ${edit.field}`;
}

/**
 * Loads the fix from the flags; the module (TypeScript or JavaScript) is resolved against `cwd`.
 * @throws UsageError when the module cannot be loaded or exports no function.
 */
export async function loadFix(flags: FixFlags, cwd: string): Promise<Fix> {
  const edits = parseEdits(flags);
  const parts = edits.map(describeEdit);
  let module: FixFunction | undefined;
  if (flags.fixModule !== undefined) {
    const file = path.resolve(cwd, flags.fixModule);
    let loaded: Record<string, unknown>;
    try {
      loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (err) {
      throw new UsageError(
        `--fix-module: cannot load ${flags.fixModule}: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`,
      );
    }
    const nested = loaded.default as Record<string, unknown> | undefined;
    const candidate = [loaded.fix, loaded.default, nested?.fix, nested?.default].find(
      (f) => typeof f === 'function',
    );
    if (typeof candidate !== 'function') {
      throw new UsageError(`--fix-module: ${flags.fixModule} exports no function (default or fix)`);
    }
    module = candidate as FixFunction;
    parts.push(`module ${path.basename(file)}`);
  }
  return { edits, ...(module ? { module } : {}), description: parts.join('; ') || 'none' };
}

/**
 * Applies the edits to a copy of `payload`; `rename`/`upper` of an absent field, or `upper` of a non-string: no change.
 * @returns the edited copy, or a skip when there are edits and the payload is not a JSON object.
 */
export function applyEdits(payload: unknown, edits: readonly FieldEdit[]): FixResult {
  if (edits.length === 0) return { kind: 'fixed', payload };
  if (!isPlainObject(payload)) {
    return { kind: 'skipped', reason: 'field edits need a JSON object payload (use --fix-module)' };
  }
  // defineProperty keeps a field named `__proto__` a plain property, as the ingest path treats it.
  const out: Record<string, unknown> = {};
  const put = (k: string, v: unknown) => defineField(out, k, v);
  for (const [k, v] of Object.entries(payload)) put(k, v);
  for (const edit of edits) {
    const has = Object.prototype.hasOwnProperty.call(out, edit.field);
    switch (edit.kind) {
      case 'set':
        put(edit.field, edit.value);
        break;
      case 'upper': {
        const value = out[edit.field];
        if (has && typeof value === 'string') put(edit.field, value.toUpperCase());
        break;
      }
      case 'rename':
        if (has) {
          const value = out[edit.field];
          delete out[edit.field];
          put(edit.to, value);
        }
        break;
      case 'drop':
        delete out[edit.field];
        break;
    }
  }
  return { kind: 'fixed', payload: out };
}

/** Applies a whole fix: the edits, then the module; a module that throws skips the row (it stays open), not the run. */
export async function applyFix(payload: unknown, fix: Fix, input: FixInput): Promise<FixResult> {
  const edited = applyEdits(payload, fix.edits);
  if (edited.kind === 'skipped' || fix.module === undefined) return edited;
  let result: unknown;
  try {
    result = await fix.module(edited.payload, input);
  } catch (err) {
    return {
      kind: 'skipped',
      reason: `fix module threw: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (result === null || result === undefined)
    return { kind: 'skipped', reason: 'fix module returned null' };
  // Checked per row: a value that is not JSON would otherwise throw later and end the whole run.
  if (typeof result === 'function' || typeof result === 'symbol') {
    return { kind: 'skipped', reason: `fix module returned a ${typeof result}, not a payload` };
  }
  try {
    payloadBytes(result);
  } catch (err) {
    return {
      kind: 'skipped',
      reason: `fix module returned a value that is not JSON: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  return { kind: 'fixed', payload: result };
}

/** The bytes a fixed payload is sent as: text as is, anything else as JSON. */
export function payloadBytes(payload: unknown): Buffer {
  return Buffer.from(typeof payload === 'string' ? payload : stringifyJson(payload), 'utf8');
}
