// Bad-data rows of drift rows: lossless original, bounded insertIds.
import assert from 'node:assert/strict';
import { badDataRowOf, boundedInsertId } from '../../../shared/drift';

/** A drift row as the retry store keeps it, past its retry budget. */
const STORED_ROW = {
  rowJson: '{"booking_id":"BK-1","fare_amount":"749.5"}',
  extraFieldsJson: '{"fare_amount":1,"big":12345678901234567890}',
  targetDest: 'p.d.t',
  error: 'E',
  nowMs: Date.UTC(2026, 9, 7, 14, 20),
  processedTimestampMs: Date.UTC(2026, 9, 7, 14, 10),
  retryCount: 3,
  sourceMessageId: 'm1',
  insertId: 'e1',
};

describe('badDataRowOf', () => {
  it('keeps the stored texts verbatim and fills every column of sql/040', () => {
    const row = badDataRowOf(STORED_ROW);
    assert.equal(row.insertId, 'bad:e1');
    assert.deepEqual(row.json, {
      bad_data:
        '{"row":{"booking_id":"BK-1","fare_amount":"749.5"},"extra_fields":{"fare_amount":1,"big":12345678901234567890}}',
      target_dest: 'p.d.t',
      error: 'E',
      insert_time: '2026-10-07T14:20:00.000Z',
      processed_timestamp: '2026-10-07T14:10:00.000Z',
      retry_count: 3,
      source_message_id: 'm1',
      insert_id: 'e1',
    });
  });

  it('hashes insertIds that would pass 128 characters, stably', () => {
    const long = 'x'.repeat(200);
    const id = boundedInsertId('bad:', long);
    assert.equal(id.length, 4 + 64);
    assert.equal(id, boundedInsertId('bad:', long));
    assert.equal(boundedInsertId('bad:', 'short'), 'bad:short');
  });
});
