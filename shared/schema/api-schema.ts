// Reads a table schema as the BigQuery API returns it (tables.get / table.getMetadata) into the core's types.
import * as v from 'valibot';
import { BQ_TYPES, type BqField, type BqMode, type BqType, type TableSchema } from './types';

/**
 * API type names → GoogleSQL names: each GoogleSQL name, and the legacy names the API reports for tables made
 * with them.
 * Source: https://cloud.google.com/bigquery/docs/reference/rest/v2/tables#TableFieldSchema (`type`).
 */
const API_TYPES: Readonly<Record<string, BqType>> = {
  ...Object.fromEntries(BQ_TYPES.map((t) => [t, t])),
  INTEGER: 'INT64',
  FLOAT: 'FLOAT64',
  DECIMAL: 'NUMERIC',
  BIGDECIMAL: 'BIGNUMERIC',
  BOOLEAN: 'BOOL',
  STRUCT: 'RECORD',
};

/** A field as the API returns it (only what the core reads). */
interface ApiField {
  name: string;
  type: string;
  mode?: string | undefined;
  fields?: ApiField[] | undefined;
}

const ApiFieldSchema: v.GenericSchema<ApiField> = v.object({
  name: v.string(),
  type: v.string(),
  mode: v.optional(v.string()),
  fields: v.optional(v.array(v.lazy(() => ApiFieldSchema))),
});

const ApiSchemaSchema = v.object({ fields: v.optional(v.array(ApiFieldSchema)) });

function toField(f: ApiField, path: string): BqField | string {
  const type = Object.hasOwn(API_TYPES, f.type.toUpperCase())
    ? API_TYPES[f.type.toUpperCase()]
    : undefined;
  if (type === undefined) return `${path}: unknown type ${JSON.stringify(f.type)}`;
  const modeText = (f.mode ?? 'NULLABLE').toUpperCase();
  if (modeText !== 'NULLABLE' && modeText !== 'REQUIRED' && modeText !== 'REPEATED') {
    return `${path}: unknown mode ${JSON.stringify(f.mode)}`;
  }
  const mode: BqMode = modeText;
  if (f.fields === undefined || f.fields.length === 0) return { name: f.name, type, mode };
  const sub: BqField[] = [];
  for (const child of f.fields) {
    const field = toField(child, `${path}.${child.name}`);
    if (typeof field === 'string') return field;
    sub.push(field);
  }
  return { name: f.name, type, mode, fields: sub };
}

/**
 * Reads the `schema` of a BigQuery table resource, e.g. `(await table.getMetadata())[0].schema`:
 * `{ fields?: [{ name, type, mode?, fields? }] }`. Legacy type names are normalised (INTEGER → INT64, FLOAT →
 * FLOAT64, BOOLEAN → BOOL, STRUCT → RECORD); an absent mode is `NULLABLE`; an absent `fields` is an empty schema.
 * @returns the schema, or `{ ok: false, message }` naming the first malformed field.
 */
export function tableSchemaFromApi(
  schema: unknown,
):
  | { readonly ok: true; readonly schema: TableSchema }
  | { readonly ok: false; readonly message: string } {
  const parsed = v.safeParse(ApiSchemaSchema, schema ?? {});
  if (!parsed.success) return { ok: false, message: v.summarize(parsed.issues) };
  const fields: BqField[] = [];
  for (const f of parsed.output.fields ?? []) {
    const field = toField(f, f.name);
    if (typeof field === 'string') return { ok: false, message: field };
    fields.push(field);
  }
  return { ok: true, schema: { fields } };
}
