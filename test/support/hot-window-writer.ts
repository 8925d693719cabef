// A writer process for the hot-window test and the benchmark: records the bookings it is sent (IPC) into the
// booking pipeline on the Firestore emulator, `concurrency` at a time like a function instance under Pub/Sub push,
// redelivering (retrying) on transient failures, then reports its outcomes and Firestore counts.
import { TransientError } from '../../shared/errors';
import { newStoreMetrics } from '../../shared/state/firestore-window-store';
import { record, type BookingSpec } from './booking-windows';
import { emulatorFirestore, firestoreBookingWindows } from './firestore-windows';

/** What the parent sends. */
export interface WriterJob {
  /** Environment for the pipeline (root collection, pipeline name, shards, bundle size). */
  env: Record<string, string>;
  /** Deliveries: the booking and the processing time it is received at (epoch ms). */
  deliveries: { spec: BookingSpec; receivedAtMs: number; messageId: string }[];
  /** Deliveries in flight at once. */
  concurrency: number;
}

/** What the writer reports. */
export interface WriterReport {
  counted: number;
  duplicates: number;
  dropped: number;
  /** Deliveries retried after a TransientError (Pub/Sub redelivery). */
  redeliveries: number;
  /** Gold rows this process emitted: [timing, index]. */
  panes: [string, number][];
  elapsedMs: number;
  metrics: ReturnType<typeof newStoreMetrics>;
}

async function run(job: WriterJob): Promise<WriterReport> {
  const db = emulatorFirestore();
  const metrics = newStoreMetrics();
  const { sink, writer } = firestoreBookingWindows(db, job.env, { metrics });
  const report: WriterReport = {
    counted: 0,
    duplicates: 0,
    dropped: 0,
    redeliveries: 0,
    panes: [],
    elapsedMs: 0,
    metrics,
  };
  const started = Date.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < job.deliveries.length) {
      const d = job.deliveries[next++];
      if (d === undefined) return;
      for (let attempt = 1; ; attempt++) {
        try {
          const outcome = await record(sink, d.spec, d.receivedAtMs, d.messageId);
          if (outcome.kind === 'counted') report.counted++;
          else if (outcome.kind === 'duplicate') report.duplicates++;
          else report.dropped++;
          break;
        } catch (err) {
          if (!(err instanceof TransientError) || attempt >= 30) throw err;
          report.redeliveries++;
          await new Promise((r) => setTimeout(r, 20 * attempt));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, worker));
  report.elapsedMs = Date.now() - started;
  report.panes = writer.gold().map((r) => [String(r.pane_timing), Number(r.pane_index)]);
  await db.terminate();
  return report;
}

process.on('message', (job: WriterJob) => {
  run(job).then(
    (report) => process.send?.({ ok: true, report }, () => process.exit(0)),
    (err: unknown) =>
      process.send?.(
        { ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) },
        () => process.exit(1),
      ),
  );
});
