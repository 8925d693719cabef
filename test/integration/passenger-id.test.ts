// The keyed hash of passenger_id on the whole ingest path against the emulators: ingestBooking's real dependencies
// (BigQuery writer, Firestore schema-retry store) built by createPipelineIngestDeps from the stack's environment plus
// OFFVIA_PASSENGER_ID_MODE=hmac-sha256 and a key. Silver holds the pseudonym (the same for one passenger, so a GROUP
// BY or join on it works), the retry store holds it too, quarantine keeps the raw payload.
import assert from 'node:assert/strict';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { loadIngestConfig } from '../../shared/config/ingest-config';
import { loadSchemaDriftConfig } from '../../shared/config/schema-drift-config';
import { tableName } from '../../shared/config/env';
import { FirestoreDriftStore } from '../../shared/drift';
import {
  ingestPipelineMessage,
  type PipelineIngestDeps,
} from '../../shared/pipeline/runtime/ingest';
import { createPipelineIngestDeps } from '../../shared/pipeline/runtime/compose';
import { BOOKING_PIPELINE } from '../../shared/pipelines/booking/definition';
import { Logger, type LogEntry } from '../../shared/logging/logger';
import { requireStack, runTag, stackClients } from '../support/drift-stack';

describe('integration: passenger_id pseudonymised before Silver (emulators)', function () {
  this.timeout(60_000);
  const { projectId, bigquery, firestore } = stackClients();
  const tag = runTag();
  const key = randomBytes(32);
  const root = `itPassengerId${tag}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    OFFVIA_PASSENGER_ID_MODE: 'hmac-sha256',
    OFFVIA_PASSENGER_ID_HMAC_KEY: key.toString('base64'),
    // Its own retry-store root, so the stack's sweep never settles these rows while the test reads them; no window
    // state, so these events do not count in the shared windows other tests read.
    OFFVIA_SCHEMA_FIRESTORE_ROOT: root,
    OFFVIA_WINDOWS_ENABLED: 'false',
  };
  const pseudonym = (id: string): string =>
    `hmac1:${createHmac('sha256', key).update(id, 'utf8').digest('hex')}`;
  const passengers = [`PAX-${randomUUID()}`, `PAX-${randomUUID()}`] as const;
  const booking = (id: string, passenger: string, extra = ''): string =>
    `{"booking_id":"${id}","passenger_id":"${passenger}","flight_number":"OF-104","origin":"JFK","destination":"LHR",` +
    `"fare":"749.50","currency":"USD","status":"CONFIRMED","event_time":"${new Date(Date.now() - 60_000).toISOString()}"${extra}}`;
  const send = (data: string, messageId: string, deps: PipelineIngestDeps) =>
    ingestPipelineMessage(
      {
        ok: true,
        message: {
          messageId,
          publishTime: new Date().toISOString(),
          publishTimeMs: Date.now(),
          attributes: {},
          data: Buffer.from(data),
          subscription: undefined,
        },
      },
      deps,
    );

  before(requireStack);
  // The pseudonymised rows must not stay in the stack's shared Silver: operator commands that later tests run
  // (quarantine reprocess, replay) refuse to write raw ids into a Silver that holds pseudonyms, as they should.
  after(async () => {
    const silver = tableName(loadIngestConfig(env).silverTable, projectId);
    await bigquery.query({
      query: `DELETE FROM \`${silver}\` WHERE STARTS_WITH(passenger_id, 'hmac1:')`,
    });
    const [left] = await bigquery.query({
      query: `SELECT COUNT(*) AS n FROM \`${silver}\` WHERE STARTS_WITH(passenger_id, 'hmac1:')`,
    });
    assert.equal(Number((left as { n: unknown }[])[0]?.n), 0, 'pseudonymised rows left in Silver');
  });

  it('writes the same pseudonym for one passenger to Silver and the retry store, never the raw id', async () => {
    const lines: LogEntry[] = [];
    const deps = await createPipelineIngestDeps(
      BOOKING_PIPELINE,
      env,
      new Logger('it-passenger-id', (e) => lines.push(e)),
    );
    const ids = [1, 2, 3, 4, 5].map((i) => `it-pid-${tag}-${i}`);
    const [p1, p2] = passengers;
    const outcomes = [
      await send(booking(`BK-PID-${tag}-1`, p1), ids[0] ?? '', deps),
      await send(booking(`BK-PID-${tag}-2`, p1), ids[1] ?? '', deps),
      await send(booking(`BK-PID-${tag}-3`, p2), ids[2] ?? '', deps),
      // A field Silver has no column for: the row waits in the retry store.
      await send(
        booking(`BK-PID-${tag}-4`, p1, `,"loyalty_tier_${tag}":"gold"`),
        ids[3] ?? '',
        deps,
      ),
      // Rejected: quarantine keeps the payload as received.
      await send(booking(`BK-PID-${tag}-5`, p2).replace('"749.50"', '"-5"'), ids[4] ?? '', deps),
    ];
    assert.deepEqual(
      outcomes.map((o) => o.destination),
      ['silver', 'silver', 'silver', 'schema_retry', 'quarantine'],
    );

    const silver = tableName(loadIngestConfig(env).silverTable, projectId);
    const [rows] = await bigquery.query({
      query: `SELECT passenger_id, COUNT(*) AS bookings FROM \`${silver}\`
              WHERE source_message_id IN UNNEST(@ids) GROUP BY passenger_id ORDER BY bookings DESC`,
      params: { ids },
    });
    assert.deepEqual(
      (rows as { passenger_id: string; bookings: number }[]).map((r) => [
        r.passenger_id,
        Number(r.bookings),
      ]),
      [
        [pseudonym(p1), 2],
        [pseudonym(p2), 1],
      ],
    );

    const drift = loadSchemaDriftConfig(env, loadIngestConfig(env).silverTable, projectId);
    const store = new FirestoreDriftStore(firestore, drift.firestoreRoot);
    const { rows: waiting } = await store.waitingRows(silver, 100);
    const held = waiting.filter((r) => r.sourceMessageId === ids[3]);
    assert.equal(held.length, 1);
    const heldRow = JSON.parse(held[0]?.rowJson ?? '{}') as Record<string, unknown>;
    assert.equal(heldRow.passenger_id, pseudonym(p1));
    assert.ok(!(held[0]?.rowJson ?? '').includes(p1));

    const [quarantined] = await bigquery.query({
      query: `SELECT raw_payload FROM \`${tableName(loadIngestConfig(env).quarantineTable, projectId)}\`
              WHERE source_message_id = @id`,
      params: { id: ids[4] },
    });
    assert.match(
      String((quarantined as { raw_payload: string }[])[0]?.raw_payload),
      new RegExp(p2),
    );

    // A cold-start configuration line names the mode and the key's fingerprint; none names the key.
    const config = lines.filter((l) => l.message === 'configuration loaded');
    const text = JSON.stringify(config);
    assert.match(text, /"mode":"hmac-sha256","key":\{"bytes":32,"fingerprint":"[0-9a-f]{12}"\}/);
    assert.ok(!text.includes(key.toString('base64').slice(0, 16)));
  });
});
