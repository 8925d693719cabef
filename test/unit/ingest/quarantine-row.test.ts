// quarantineRow: lab columns, truncation of huge payloads, exact bytes for invalid UTF-8.
import assert from 'node:assert/strict';
import { MAX_REASON_CHARS, quarantineRow } from '../../../shared/ingest/quarantine-row';

const base = {
  messageId: 'm-1',
  publishTimeMs: Date.UTC(2026, 9, 7),
  attributes: {} as Record<string, string>,
};
const at = Date.UTC(2026, 9, 7, 14, 10, 0);

describe('quarantineRow', () => {
  it('fills the lab columns and the replay columns', () => {
    const row = quarantineRow(
      { ...base, attributes: { a: 'b' }, data: Buffer.from('{"x"') },
      'PARSE_JSON',
      'bad',
      at,
      1024,
    );
    assert.deepEqual(row, {
      raw_payload: '{"x"',
      error_reason: 'bad',
      error_stage: 'PARSE_JSON',
      received_timestamp: '2026-10-07T14:10:00.000Z',
      source_message_id: 'm-1',
      publish_time: '2026-10-07T00:00:00.000Z',
      attributes: '{"a":"b"}',
      payload_bytes: 4,
      payload_truncated: false,
      raw_payload_base64: null,
    });
  });

  it('truncates a huge payload to the byte cap and says so', () => {
    const data = Buffer.from('é'.repeat(3000)); // 6000 bytes
    const row = quarantineRow({ ...base, data }, 'PARSE_JSON', 'r', at, 1025);
    assert.equal(row.payload_bytes, 6000);
    assert.equal(row.payload_truncated, true);
    assert.ok(Buffer.byteLength(row.raw_payload) <= 1025 + 2); // a cut character becomes one U+FFFD
    assert.equal(row.raw_payload_base64, null);
  });

  it('keeps the exact bytes of invalid UTF-8 in base64', () => {
    const data = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    const row = quarantineRow({ ...base, data }, 'PARSE_JSON', 'r', at, 1024);
    assert.equal(row.raw_payload, '{\uFFFD\uFFFD}');
    assert.deepEqual(Buffer.from(row.raw_payload_base64 ?? '', 'base64'), data);
  });

  it('caps the reason', () => {
    const row = quarantineRow(
      { ...base, data: Buffer.alloc(0) },
      'SCHEMA_VALIDATION',
      'x'.repeat(10_000),
      at,
      1024,
    );
    assert.ok(row.error_reason.length < MAX_REASON_CHARS + 20);
    assert.match(row.error_reason, /truncated\)$/);
  });
});
