// Declarative specs of the environment variables: name, default, allowed values, unit and meaning. The loaders in
// this folder read each variable through its spec, and docs/configuration.md is generated from the same specs
// (`npm run docs:config`), so the documented defaults and ranges are the ones the code enforces.
import { ConfigError } from '../errors';
import {
  type Env,
  type TableRef,
  readBool,
  readInt,
  readOptionalString,
  readString,
  readTable,
} from './env';

/** The unit of an integer variable; the reference prints it and converts large values (ms → min, days). */
export type VarUnit = 'ms' | 'minutes' | 'bytes' | 'count';

/** What every variable spec has. */
interface BaseVarSpec {
  /** The environment variable, e.g. `OFFVIA_SCHEMA_WINDOW_MINUTES`. */
  readonly name: string;
  /** What it changes, in the field's terms; one or two sentences, Markdown allowed (it lands in a table cell). */
  readonly meaning: string;
  /** Set when the default is not a constant: the reference prints this, and the loader does not use `default`. */
  readonly defaultText?: string;
}

/** A base-10 integer in [min, max] (`readInt`). */
export interface IntVarSpec extends BaseVarSpec {
  readonly kind: 'int';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  readonly unit: VarUnit;
  /**
   * A bound that depends on another variable or a cross-variable rule, printed beside the static range (which
   * stays the widest the loader accepts).
   */
  readonly rangeText?: string;
}

/** `true/false/1/0/yes/no` (`readBool`). */
export interface BoolVarSpec extends BaseVarSpec {
  readonly kind: 'bool';
  readonly default: boolean;
}

/** One of a fixed list of words. */
export interface ChoiceVarSpec<T extends string = string> extends BaseVarSpec {
  readonly kind: 'choice';
  readonly choices: readonly T[];
  readonly default: T;
}

/** A BigQuery table, `dataset.table` or `project.dataset.table` (`readTable`). */
export interface TableVarSpec extends BaseVarSpec {
  readonly kind: 'table';
  readonly default: string;
}

/** A comma-separated list of BigQuery tables. */
export interface TableListVarSpec extends BaseVarSpec {
  readonly kind: 'tables';
  /** Always computed (e.g. the Silver table): see `defaultText`. */
  readonly defaultText: string;
}

/** A name matching `pattern` (Firestore collection ids, pipeline names). */
export interface NameVarSpec extends BaseVarSpec {
  readonly kind: 'name';
  readonly default: string;
  readonly pattern: RegExp;
  /** The rule in words for the reference, e.g. "a letter, then letters, digits or _". */
  readonly patternText: string;
}

/** Free text with no default (a project id, an emulator address); unset means "not used". */
export interface TextVarSpec extends BaseVarSpec {
  readonly kind: 'text';
  /** What unset means, for the reference. */
  readonly defaultText: string;
  /** The accepted values in words, when the loader checks more than "any text". */
  readonly allowedText?: string;
}

/** Any variable spec. */
export type VarSpec =
  | IntVarSpec
  | BoolVarSpec
  | ChoiceVarSpec
  | TableVarSpec
  | TableListVarSpec
  | NameVarSpec
  | TextVarSpec;

/** A titled group of variables: one section of the generated reference, in the order given. */
export interface VarGroup {
  readonly title: string;
  /** One or two sentences under the section title: who reads these and where they are explained. */
  readonly intro: string;
  readonly vars: readonly VarSpec[];
}

/** Builds an integer spec; a function so each table reads as a list of calls with the checked shape. */
export function intVar(spec: Omit<IntVarSpec, 'kind'>): IntVarSpec {
  if (
    spec.min > spec.max ||
    (spec.defaultText === undefined && (spec.default < spec.min || spec.default > spec.max))
  ) {
    throw new Error(`${spec.name}: default ${spec.default} outside [${spec.min}, ${spec.max}]`);
  }
  return { kind: 'int', ...spec };
}

/** An integer spec's fields but its unit and range, which `msVar` and friends take first. */
type IntVarFields = Omit<IntVarSpec, 'kind' | 'unit' | 'min' | 'max'>;

/** Builds integer specs in one unit, each from its range `[min, max]` and other fields (checked as `intVar`). */
const unitVar =
  (unit: VarUnit) =>
  ([min, max]: readonly [number, number], spec: IntVarFields): IntVarSpec =>
    intVar({ ...spec, min, max, unit });

/** Builds an integer spec in ms from its range `[min, max]`. */
export const msVar = unitVar('ms');

/** Builds an integer spec counting things from its range `[min, max]`. */
export const countVar = unitVar('count');

/** Builds an integer spec in minutes from its range `[min, max]`. */
export const minutesVar = unitVar('minutes');

/** Builds an integer spec in bytes from its range `[min, max]`. */
export const bytesVar = unitVar('bytes');

/** A builder of the specs of one kind: the spec's fields, with `kind` added. */
const kindVar =
  <S extends VarSpec>(kind: S['kind']) =>
  (spec: Omit<S, 'kind'>): S =>
    ({ kind, ...spec }) as S;

/** Builds a boolean spec. */
export const boolVar = kindVar<BoolVarSpec>('bool');

/** Builds a choice spec. */
export function choiceVar<T extends string>(
  spec: Omit<ChoiceVarSpec<T>, 'kind'>,
): ChoiceVarSpec<T> {
  return { kind: 'choice', ...spec };
}

/** Builds a table spec. */
export const tableVar = kindVar<TableVarSpec>('table');

/** Builds a table-list spec. */
export const tableListVar = kindVar<TableListVarSpec>('tables');

/** Builds a name spec. */
export const nameVar = kindVar<NameVarSpec>('name');

/** Builds a free-text spec. */
export const textVar = kindVar<TextVarSpec>('text');

/**
 * Reads an integer variable through its spec. `bounds` replaces the default or a bound that depends on another
 * variable (the spec's `rangeText` says so); without it, the spec's own default and range apply.
 * @throws ConfigError naming the variable (the message of `readInt`).
 */
export function readIntVar(
  env: Env,
  spec: IntVarSpec,
  bounds: { readonly fallback?: number; readonly min?: number; readonly max?: number } = {},
): number {
  return readInt(
    env,
    spec.name,
    bounds.fallback ?? spec.default,
    bounds.min ?? spec.min,
    bounds.max ?? spec.max,
  );
}

/**
 * Reads a table variable through its spec.
 * @throws ConfigError naming the variable (the message of `readTable`).
 */
export function readTableVar(env: Env, spec: TableVarSpec): TableRef {
  return readTable(env, spec.name, spec.default);
}

/**
 * Reads a name variable through its spec (default applied) and checks it against `spec.pattern`.
 * @throws ConfigError naming the variable: `expected <patternText>, got "<value>"`
 */
export function readNameVar(env: Env, spec: NameVarSpec): string {
  const value = readString(env, spec.name, spec.default);
  if (!spec.pattern.test(value)) {
    throw new ConfigError(spec.name, `expected ${spec.patternText}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * Reads a choice variable through its spec: one of `spec.choices` (case-insensitive), or `fallback` (the spec's
 * default unless given) when unset or empty.
 * @throws ConfigError naming the variable and the choices for any other value
 */
export function readChoiceVar<T extends string>(
  env: Env,
  spec: ChoiceVarSpec<T>,
  fallback: T = spec.default,
): T {
  const raw = readOptionalString(env, spec.name);
  if (raw === undefined) return fallback;
  const found = spec.choices.find((c) => c.toLowerCase() === raw.toLowerCase());
  if (found === undefined) {
    throw new ConfigError(
      spec.name,
      `expected one of ${spec.choices.join(', ')}, got ${JSON.stringify(raw)}`,
    );
  }
  return found;
}

/** A spec the generic reader reads with its own default and range (not a list, not free text). */
export type PlainVarSpec = IntVarSpec | BoolVarSpec | ChoiceVarSpec | TableVarSpec | NameVarSpec;

/** The value a plain spec reads to. */
export type VarValue<S> = S extends IntVarSpec
  ? number
  : S extends BoolVarSpec
    ? boolean
    : S extends ChoiceVarSpec<infer T>
      ? T
      : S extends TableVarSpec
        ? TableRef
        : S extends NameVarSpec
          ? string
          : never;

/** The keys of a spec table whose specs are plain: what `readVars` reads when no keys are given. */
export type PlainKey<V> = { [K in keyof V]: V[K] extends PlainVarSpec ? K : never }[keyof V];

/** The values of the listed keys of a spec table, one field per key (what a loader returns for them). */
export type VarValues<V, K extends keyof V = keyof V> = { -readonly [P in K]: VarValue<V[P]> };

/** Reads one plain variable through its spec (`readIntVar`, `readBoolVar`, ... by kind). */
export function readVar<S extends PlainVarSpec>(env: Env, spec: S): VarValue<S>;
export function readVar(env: Env, spec: PlainVarSpec): VarValue<PlainVarSpec> {
  switch (spec.kind) {
    case 'int':
      return readIntVar(env, spec);
    case 'bool':
      return readBool(env, spec.name, spec.default);
    case 'choice':
      return readChoiceVar(env, spec);
    case 'table':
      return readTableVar(env, spec);
    case 'name':
      return readNameVar(env, spec);
  }
}

/**
 * Reads the listed variables of a spec table (without `keys`: every plain one, in table order) through their specs,
 * in the order listed (so the first bad one is the one reported), each with its spec's default and range.
 * @throws ConfigError naming the first bad variable
 */
export function readVars<V extends Record<string, VarSpec>>(
  env: Env,
  vars: V,
): VarValues<V, PlainKey<V>>;
export function readVars<K extends string, V extends Record<K, PlainVarSpec>>(
  env: Env,
  vars: V,
  keys: readonly K[],
): VarValues<V, K>;
export function readVars(
  env: Env,
  vars: Record<string, VarSpec>,
  keys: readonly string[] = Object.keys(vars).filter(
    (k) => !['text', 'tables'].includes(vars[k]!.kind),
  ),
): Record<string, unknown> {
  return Object.fromEntries(keys.map((key) => [key, readVar(env, vars[key] as PlainVarSpec)]));
}
