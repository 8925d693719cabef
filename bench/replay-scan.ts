// The BigQuery bytes an `offvia replay` of one hour (and of one day) scans with a DAY-partitioned Bronze and with an
// unpartitioned one: fills a scratch copy of Bronze on the local stack with a week of messages and asks the same
// estimate `offvia replay --dry-run` prints there. Usage (a stack up, or inside with-stack.sh):
//   npx tsx bench/replay-scan.ts [messages-per-hour, default 2000]
import { connect } from '../shared/ops/context';
import { formatBytes } from '../shared/ops/replay-format';
import { estimateScan } from '../shared/ops/replay-bronze';
import { cutChunks } from '../shared/ops/replay-plan';
import { mixedEvents } from '../test/support/events';

const HOURS = 7 * 24;
const SCRATCH = 'raw_bookings_replay_scan';

async function main(): Promise<void> {
  const perHour = Number(process.argv[2] ?? 2000);
  if (!Number.isInteger(perHour) || perHour < 1)
    throw new Error('messages-per-hour: a positive integer');
  const ctx = connect({});
  if (ctx.mode !== 'local') throw new Error('local stack only: this writes a scratch table');
  const table = ctx.bigquery.dataset('offvia_bronze').table(SCRATCH);
  const [exists] = await table.exists();
  if (exists) await table.delete();
  await ctx.bigquery.query(
    `CREATE TABLE \`${ctx.projectId}.offvia_bronze.${SCRATCH}\` (subscription_name STRING, message_id STRING,
       publish_time TIMESTAMP, data STRING, attributes JSON) PARTITION BY DATE(publish_time)`,
  );
  // A week ending at the last full hour; each hour `perHour` messages of the test generator's mix and sizes.
  const endMs = Math.floor(Date.now() / 3_600_000) * 3_600_000;
  const startMs = endMs - HOURS * 3_600_000;
  const payloads = mixedEvents(perHour, 42, endMs).map((e) => e.payload);
  let id = 0;
  for (let h = 0; h < HOURS; h++) {
    const rows = payloads.map((data, i) => ({
      insertId: `scan-${h}-${i}`,
      json: {
        subscription_name: `projects/${ctx.projectId}/subscriptions/booking-events-bronze`,
        message_id: String(++id),
        publish_time: new Date(
          startMs + h * 3_600_000 + Math.floor((i * 3_600_000) / perHour),
        ).toISOString(),
        data,
        attributes: JSON.stringify({ source: 'bench' }),
      },
    }));
    for (let i = 0; i < rows.length; i += 500)
      await table.insert(rows.slice(i, i + 500), { raw: true });
  }
  const scratch = {
    ...ctx,
    tables: { ...ctx.tables, bronze: `${ctx.projectId}.offvia_bronze.${SCRATCH}` },
  };
  const partitioning = { partitioned: 'unknown' as const, detail: 'scratch copy' };
  // The hour 12:00-13:00 UTC of the week's last full day, then that whole day in hourly and in daily chunks.
  const dayMs = Math.floor((endMs - 1) / 86_400_000) * 86_400_000 - 86_400_000;
  const cases: [string, number, number, number][] = [
    ['one hour, --chunk-minutes 60', dayMs + 12 * 3_600_000, dayMs + 13 * 3_600_000, 60],
    ['one day, --chunk-minutes 60', dayMs, dayMs + 86_400_000, 60],
    ['one day, --chunk-minutes 1440', dayMs, dayMs + 86_400_000, 1440],
  ];
  console.log(
    `Bronze: ${id} messages over ${HOURS} hours (${perHour} an hour), ${new Date(startMs).toISOString()} to ${new Date(endMs).toISOString()}`,
  );
  for (const [label, fromMs, toMs, minutes] of cases) {
    const scan = await estimateScan(
      scratch,
      cutChunks(fromMs, toMs, minutes * 60_000),
      null,
      partitioning,
    );
    console.log(
      `${label}: DAY-partitioned ${formatBytes(scan.partitionedBytes ?? 0)}; unpartitioned ${formatBytes(scan.unpartitionedBytes ?? 0)}`,
    );
  }
  await table.delete();
  await ctx.close();
}

main().catch((err: unknown) => {
  console.error(`replay-scan: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
