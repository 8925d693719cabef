// The text of `offvia replay`'s report: what a dry run would scan, what a run did, its failures and warnings.
import { keyValues, section, table } from './output';
import type { ReplayReport } from './replay';

/** Bytes as `1.23 GiB (1,320,702,443 bytes)`. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const exact = `${Math.round(bytes).toLocaleString('en-US')} bytes`;
  return unit === 0 ? exact : `${value.toFixed(2)} ${units[unit]} (${exact})`;
}

/**
 * At most 20 rows of (message, `column`) under `title`, cells clipped at `clipAt` characters; nothing when there are
 * no rows. The shared failure and skip listing of `replay`, `quarantine reprocess` and `bad-data redrive`.
 */
export function messageSection(
  title: string,
  column: string,
  rows: readonly (readonly [string | null, string])[],
  clipAt = 100,
): string[] {
  if (rows.length === 0) return [];
  return [section(title, table(['message', column], rows.slice(0, 20), clipAt))];
}

const bytesIfKnown = (label: string, bytes: number | null) =>
  bytes === null ? [] : ([[label, formatBytes(bytes)]] as const);

/** The report as text. */
export function formatReplay(r: ReplayReport): string {
  const range = `${r.from} to ${r.to}, ${r.chunks} chunk(s) of ${r.chunkMinutes} min`;
  const out: string[] = [];
  if (r.dryRun) {
    out.push(`replay --dry-run: ${range}; nothing written`);
    const scan = r.scan;
    out.push(
      section(
        'Would replay',
        keyValues([
          ['Bronze rows in the range', r.bronzeRows],
          ['filters', r.filters.length === 0 ? '(none)' : r.filters.join(', ')],
          ['message ids', r.messageIds === null ? '(all)' : r.messageIds.length],
          ['Bronze partitioning', `${r.partitioning.partitioned}: ${r.partitioning.detail}`],
          ...(scan === null
            ? []
            : ([
                [`bytes scanned (${scan.method})`, formatBytes(scan.bytes)],
                ['bytes billed on demand (10 MB minimum a query)', formatBytes(scan.billedBytes)],
                ...bytesIfKnown('  if DAY-partitioned on publish_time', scan.partitionedBytes),
                ...bytesIfKnown('  if not partitioned', scan.unpartitionedBytes),
                ['how', scan.note],
              ] as const)),
        ]),
      ),
    );
  } else {
    const rate = r.rowsPerSecond === null ? '' : ` (${r.rowsPerSecond} rows/s)`;
    out.push(
      `replay run ${r.runId}${r.resumed ? ' (resumed)' : ''}: ${range}; ${r.chunksRun} chunk(s) run in ${(r.elapsedMs / 1000).toFixed(1)} s${rate}; ${r.status}`,
    );
    const t = r.totals;
    if (t !== null) {
      out.push(
        section(
          'Outcomes (every chunk of the run)',
          keyValues([
            ['rows replayed', t.rows],
            ['Silver', t.outcomes.silver],
            ['quarantine', t.outcomes.quarantine],
            ['retry store', t.outcomes.schema_retry],
            ['bad data', t.outcomes.bad_data],
            ['failed', t.failed],
            [
              'already present, not written again',
              Object.entries(t.alreadyPresent)
                .map(([k, n]) => `${k} ${n}`)
                .join(', ') || '0',
            ],
            ['quarantine rows resolved', r.resolutionsWritten],
            ['chunks done / failed', `${t.chunksDone} / ${t.chunksFailed}`],
          ]),
        ),
      );
      out.push(
        ...messageSection(
          `Failed (resume with: offvia replay --resume ${r.runId})`,
          'error',
          t.failures.map((f) => [f.messageId, f.error]),
        ),
      );
    }
    if (r.logFile) out.push(`\nlog: ${r.logFile}`);
  }
  for (const w of r.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}
