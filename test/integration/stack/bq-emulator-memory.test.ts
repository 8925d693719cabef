// The local BigQuery emulator's memory does not grow with every insertAll: 300 calls of 10 rows into a table of its
// own, the emulator's resident set size read from /proc before and after. Unpatched (a time-travel snapshot of the
// whole table after every write) the same calls added about 140 MiB; the soak (npm run soak:bq) runs 20,000.
// Runs inside deploy/local/with-stack.sh, which exports the stack's environment.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { BigQuery, type Table } from '@google-cloud/bigquery';
import { projectIdFromEnv } from '../../../deploy/local/resources';

/** insertAll calls made, and rows per call (the size of ingestBooking's typical batches). */
const CALLS = 300;
const ROWS = 10;
/** Allowed RSS growth over the calls, MiB: the rows themselves are well under 1 MiB. */
const MAX_GROWTH_MIB = 40;

/** Resident set size of a process, MiB, from /proc/PID/status (VmRSS, in kB). */
function rssMib(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(match, `no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

/** The stack's BigQuery emulator pid, from the pid file stack.sh writes (first line). */
function emulatorPid(): number {
  const dir = process.env.OFFVIA_STACK_DIR ?? join(process.cwd(), '.local', 'stack');
  const pid = Number(
    readFileSync(join(dir, 'pids', 'bigquery-emulator.pid'), 'utf8').split('\n')[0],
  );
  assert.ok(Number.isInteger(pid) && pid > 0, 'no pid in the bigquery-emulator pid file');
  return pid;
}

async function insertCalls(table: Table, from: number, to: number): Promise<void> {
  for (let call = from; call < to; call++) {
    const rows = Array.from({ length: ROWS }, (_, i) => ({
      insertId: `${call}-${i}`,
      json: { id: `${call}-${i}`, payload: 'x'.repeat(100), at: new Date().toISOString() },
    }));
    await table.insert(rows, { raw: true });
  }
}

describe('local stack: BigQuery emulator memory under insertAll', function () {
  this.timeout(120_000);
  const datasetId = `memory_${randomUUID().slice(0, 8)}`;
  let bigquery: BigQuery;

  before(function () {
    assert.ok(
      process.env.BIGQUERY_EMULATOR_HOST,
      'BIGQUERY_EMULATOR_HOST is not set: run inside bash deploy/local/with-stack.sh',
    );
    bigquery = new BigQuery({ projectId: projectIdFromEnv(), autoRetry: false });
  });

  after(async function () {
    await bigquery?.dataset(datasetId).delete({ force: true });
  });

  it(`grows by less than ${MAX_GROWTH_MIB} MiB over ${CALLS} calls of ${ROWS} rows`, async () => {
    const [dataset] = await bigquery.createDataset(datasetId);
    const [table] = await dataset.createTable('events', {
      schema: 'id:STRING, payload:STRING, at:TIMESTAMP',
    });
    const pid = emulatorPid();
    // Warm-up: the first calls load code paths and caches once.
    await insertCalls(table, 0, 20);
    const before = rssMib(pid);
    await insertCalls(table, 20, CALLS);
    const after = rssMib(pid);
    const [rows] = await bigquery.query(`SELECT COUNT(*) AS n FROM \`${datasetId}.events\``);
    assert.equal(Number((rows as { n?: unknown }[])[0]?.n), CALLS * ROWS);
    assert.ok(
      after - before < MAX_GROWTH_MIB,
      `RSS grew ${(after - before).toFixed(0)} MiB (${before.toFixed(0)} -> ${after.toFixed(0)}) over ${CALLS - 20} calls`,
    );
  });
});
