// The BigQuery emulator's memory under a long stream of insertAll calls (run by bench/soak-bq.sh, which starts the
// emulator): streams small batches into one Silver-shaped table, samples the emulator's resident set size from
// /proc/PID/status as it goes, and fails unless the growth stays within the stated bound.
import { readFileSync } from 'node:fs';
import { parseArgs as parseNodeArgs } from 'node:util';
import { BigQuery } from '@google-cloud/bigquery';

/**
 * Default bound on the emulator's RSS growth over a soak, MiB: from the first sample (after the first
 * `--sample-every` calls) to the largest one. What the emulator must keep is the rows themselves: 20,000 calls of 10
 * rows are 200,000 Silver-shaped rows, which took 29 MiB (about 0.15 KiB a row) on 2026-12-01; the bound leaves room
 * for three times that. Before the snapshot patch 600 calls alone grew it by 370 MiB, and the growth per call rose
 * with the table.
 */
export const DEFAULT_MAX_GROWTH_MB = 100;

const USAGE = `usage: npm run soak:bq -- [flags]
       (or: bash bench/soak-bq.sh [flags], from the repository root)

Starts a BigQuery emulator of its own (the local stack's settings), makes insertAll calls into one
Silver-shaped table, prints the emulator's resident memory (RSS) as it goes and fails (exit 1) if it
grows by more than the bound.

  --calls N           insertAll calls (default 20000)
  --rows R            rows per call (default 10)
  --sample-every S    calls between two RSS samples (default 500)
  --max-growth-mb M   allowed RSS growth from the first sample to the largest, MiB (default ${DEFAULT_MAX_GROWTH_MB})
  --json              print the samples and the verdict as one JSON object on stdout
  -h, --help          print this and exit

Exit status: 0 within the bound, 1 beyond it (or the emulator failed), 2 a usage error.`;

/** The soak's settings. */
interface Settings {
  calls: number;
  rows: number;
  sampleEvery: number;
  maxGrowthMb: number;
  json: boolean;
  /** The emulator's REST base URL and pid (given by soak-bq.sh). */
  url?: string;
  pid?: number;
}

/** One RSS sample. */
interface Sample {
  /** insertAll calls made so far. */
  calls: number;
  /** Resident set size of the emulator, MiB. */
  rssMb: number;
  /** Milliseconds since the first call. */
  elapsedMs: number;
}

class UsageError extends Error {}

function positive(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^[1-9][0-9]*$/.test(raw))
    throw new UsageError(`${flag} must be a positive integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

function parseSettings(argv: string[]): Settings | 'help' {
  let values;
  try {
    ({ values } = parseNodeArgs({
      args: argv,
      options: {
        calls: { type: 'string' },
        rows: { type: 'string' },
        'sample-every': { type: 'string' },
        'max-growth-mb': { type: 'string' },
        json: { type: 'boolean' },
        url: { type: 'string' },
        pid: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return 'help';
  const settings: Settings = {
    calls: positive('--calls', values.calls, 20_000),
    rows: positive('--rows', values.rows, 10),
    sampleEvery: positive('--sample-every', values['sample-every'], 500),
    maxGrowthMb: positive('--max-growth-mb', values['max-growth-mb'], DEFAULT_MAX_GROWTH_MB),
    json: values.json ?? false,
  };
  if (values.url !== undefined) settings.url = values.url;
  if (values.pid !== undefined) settings.pid = positive('--pid', values.pid, 0);
  return settings;
}

/** Resident set size of a process, MiB, from the VmRSS line of /proc/PID/status (Linux reports kB). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!match) throw new Error(`no VmRSS line in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

/** `rows` Silver-shaped rows for call number `call`, with insertIds, in the raw insertAll form. */
function batch(call: number, rows: number, nowMs: number) {
  return Array.from({ length: rows }, (_, i) => {
    const id = `SOAK-${call}-${i}`;
    return {
      insertId: id,
      json: {
        booking_id: id,
        passenger_id: `PAX-${(call * rows + i) % 100_000}`,
        flight_number: `OF-${100 + (i % 900)}`,
        origin_airport: 'JFK',
        destination_airport: 'LHR',
        fare_amount: '749.50',
        currency: 'EUR',
        booking_status: 'CONFIRMED',
        event_timestamp: new Date(nowMs).toISOString(),
        ingestion_timestamp: new Date(nowMs).toISOString(),
        source_message_id: `${call}-${i}`,
      },
    };
  });
}

async function soak(settings: Settings): Promise<number> {
  const { url, pid } = settings;
  if (url === undefined || pid === undefined)
    throw new UsageError('--url and --pid are set by bench/soak-bq.sh: run that');
  const bigquery = new BigQuery({ projectId: 'offvia-soak', apiEndpoint: url, autoRetry: false });
  const [dataset] = await bigquery.createDataset('soak');
  await bigquery.query(
    `CREATE TABLE \`offvia-soak.soak.fact_bookings\` (booking_id STRING NOT NULL, passenger_id STRING NOT NULL,
       flight_number STRING NOT NULL, origin_airport STRING NOT NULL, destination_airport STRING NOT NULL,
       fare_amount NUMERIC NOT NULL, currency STRING NOT NULL, booking_status STRING NOT NULL,
       event_timestamp TIMESTAMP NOT NULL, ingestion_timestamp TIMESTAMP NOT NULL, source_message_id STRING NOT NULL)
     PARTITION BY DATE(event_timestamp) CLUSTER BY origin_airport, destination_airport`,
  );
  const table = dataset.table('fact_bookings');
  const samples: Sample[] = [];
  const startedMs = Date.now();
  const say = (text: string): void => {
    if (!settings.json) console.log(text);
  };
  say(
    `soak: ${settings.calls} insertAll calls of ${settings.rows} rows; emulator pid ${pid}; RSS ${rssMb(pid).toFixed(0)} MiB before`,
  );
  for (let call = 1; call <= settings.calls; call++) {
    await table.insert(batch(call, settings.rows, Date.now()), { raw: true });
    if (call % settings.sampleEvery === 0 || call === settings.calls) {
      const elapsedMs = Date.now() - startedMs;
      const sample = { calls: call, rssMb: rssMb(pid), elapsedMs };
      samples.push(sample);
      const first = samples[0] ?? sample;
      const rate = (call / elapsedMs) * 1000;
      const etaS = Math.round((settings.calls - call) / rate);
      say(
        `${String(call).padStart(6)} calls  ${String(call * settings.rows).padStart(8)} rows  ` +
          `RSS ${sample.rssMb.toFixed(0).padStart(5)} MiB  (${(sample.rssMb - first.rssMb >= 0 ? '+' : '') + (sample.rssMb - first.rssMb).toFixed(0)} since ${first.calls})  ` +
          `${rate.toFixed(0)} calls/s  ETA ${etaS} s`,
      );
    }
  }
  const [countRows] = await bigquery.query(
    'SELECT COUNT(*) AS n FROM `offvia-soak.soak.fact_bookings`',
  );
  const n = Number((countRows as { n?: unknown }[])[0]?.n);
  const first = samples[0];
  const peak = Math.max(...samples.map((s) => s.rssMb));
  const growthMb = first ? peak - first.rssMb : 0;
  const ok = growthMb <= settings.maxGrowthMb && Number(n) === settings.calls * settings.rows;
  const verdict =
    `${ok ? 'OK' : 'FAILED'}: RSS ${first?.rssMb.toFixed(0)} MiB after ${first?.calls} calls, peak ${peak.toFixed(0)} MiB, ` +
    `growth ${growthMb.toFixed(0)} MiB (bound ${settings.maxGrowthMb} MiB); ${n} rows in the table ` +
    `(expected ${settings.calls * settings.rows}); ${((Date.now() - startedMs) / settings.calls).toFixed(1)} ms per call`;
  if (settings.json) {
    console.log(
      JSON.stringify({
        settings: { ...settings, url: undefined },
        samples,
        peakMb: peak,
        growthMb,
        rows: Number(n),
        ok,
      }),
    );
  } else {
    console.log(verdict);
  }
  return ok ? 0 : 1;
}

async function main(): Promise<void> {
  try {
    const parsed = parseSettings(process.argv.slice(2));
    if (parsed === 'help') {
      console.log(USAGE);
      return;
    }
    if (process.env.OFFVIA_SOAK_CHECK_ONLY === '1') return;
    process.exitCode = await soak(parsed);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`soak:bq: ${error.message} (--help for the flags)`);
      process.exitCode = 2;
      return;
    }
    console.error(
      'soak:bq failed:',
      error instanceof Error ? (error.stack ?? error.message) : error,
    );
    process.exitCode = 1;
  }
}

void main();
