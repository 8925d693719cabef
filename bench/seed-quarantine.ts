// Seeds the local stack's quarantine table with N rows of one producer bug (lower-case airport codes), as ingest
// would have written them, to time `offvia quarantine reprocess` on many rows. Not for a real project.
// Usage (stack up, env sourced): npx tsx bench/seed-quarantine.ts 10000 TAG
import { randomBytes } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';

const count = Number(process.argv[2] ?? '10000');
const tag = process.argv[3] ?? randomBytes(3).toString('hex');
const projectId = process.env.OFFVIA_PROJECT_ID ?? 'offvia-local';
const host = process.env.BIGQUERY_EMULATOR_HOST ?? '';
if (host === '')
  throw new Error('BIGQUERY_EMULATOR_HOST is not set: source .local/stack/env first');

const letters = (n: number) =>
  [...randomBytes(n)].map((b) => String.fromCharCode(97 + (b % 26))).join('');

async function main(): Promise<void> {
  const bq = new BigQuery({ projectId, apiEndpoint: host, autoRetry: false });
  const table = bq.dataset('offvia_quarantine').table('poisoned_events');
  const now = Date.now();
  for (let i = 0; i < count; i += 500) {
    const rows = Array.from({ length: Math.min(500, count - i) }, (_, j) => {
      const n = i + j;
      const payload = JSON.stringify({
        booking_id: `BK-${tag}-${n}`,
        passenger_id: `PAX-${n}`,
        flight_number: 'OF-1',
        origin: letters(3),
        destination: letters(3),
        fare: `${(n % 500) + 1}.00`,
        currency: 'USD',
        // Spread over the last four minutes: within the allowed lateness, over several one-minute windows.
        event_time: new Date(now - (n % 240) * 1000).toISOString(),
      });
      const id = `seed-${tag}-${n}`;
      return {
        insertId: id,
        json: {
          raw_payload: payload,
          error_reason: `seeded ${tag}: Invalid origin: not a three-letter upper-case IATA airport code`,
          error_stage: 'BUSINESS_RULE_VALIDATION',
          received_timestamp: new Date(now).toISOString(),
          source_message_id: id,
          payload_bytes: Buffer.byteLength(payload),
          payload_truncated: false,
        },
      };
    });
    await table.insert(rows, { raw: true });
  }
  console.log(`seeded ${count} quarantine rows, reason pattern: seeded ${tag}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
