// Reading a table schema from BigQuery's API shape, legacy type names included.
import assert from 'node:assert/strict';
import { tableSchemaFromApi } from '../../../shared/schema';

describe('schema/api-schema', () => {
  it('normalises legacy type names and absent modes', () => {
    const r = tableSchemaFromApi({
      fields: [
        { name: 'booking_id', type: 'STRING', mode: 'REQUIRED' },
        { name: 'bags', type: 'INTEGER' },
        { name: 'weight', type: 'FLOAT', mode: 'NULLABLE' },
        { name: 'vip', type: 'BOOLEAN' },
        { name: 'extras', type: 'JSON' },
        {
          name: 'addr',
          type: 'RECORD',
          mode: 'REPEATED',
          fields: [{ name: 'city', type: 'STRING', description: 'ignored' }],
        },
      ],
    });
    assert.ok(r.ok);
    assert.deepEqual(r.schema.fields, [
      { name: 'booking_id', type: 'STRING', mode: 'REQUIRED' },
      { name: 'bags', type: 'INT64', mode: 'NULLABLE' },
      { name: 'weight', type: 'FLOAT64', mode: 'NULLABLE' },
      { name: 'vip', type: 'BOOL', mode: 'NULLABLE' },
      { name: 'extras', type: 'JSON', mode: 'NULLABLE' },
      {
        name: 'addr',
        type: 'RECORD',
        mode: 'REPEATED',
        fields: [{ name: 'city', type: 'STRING', mode: 'NULLABLE' }],
      },
    ]);
  });

  it('reads an absent schema as an empty one', () => {
    assert.deepEqual(tableSchemaFromApi(undefined), { ok: true, schema: { fields: [] } });
    assert.deepEqual(tableSchemaFromApi({}), { ok: true, schema: { fields: [] } });
  });

  it('refuses unknown types, unknown modes and malformed shapes, naming the field', () => {
    const unknownType = tableSchemaFromApi({
      fields: [{ name: 'a', type: 'RECORD', fields: [{ name: 'b', type: 'WAT' }] }],
    });
    assert.ok(!unknownType.ok);
    assert.match(unknownType.message, /a\.b: unknown type "WAT"/);
    const unknownMode = tableSchemaFromApi({
      fields: [{ name: 'a', type: 'STRING', mode: 'SOMETIMES' }],
    });
    assert.ok(!unknownMode.ok);
    assert.equal(tableSchemaFromApi({ fields: [{ type: 'STRING' }] }).ok, false);
    assert.equal(tableSchemaFromApi({ fields: 'nope' }).ok, false);
    assert.equal(
      tableSchemaFromApi({ fields: [{ name: 'toString', type: 'constructor' }] }).ok,
      false,
    );
  });
});
