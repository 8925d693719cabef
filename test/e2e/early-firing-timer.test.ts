// End to end on the local stack: a processing-time timer fires without a new element. One booking, nothing after
// it: its window's EARLY pane (30 s after the pane's first element) reaches gold by its deadline + 5 s, fired by the
// stack's scheduled fireWindows run while it loops (shared/state/timer-loop.ts), not at the next scheduler minute.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import path from 'node:path';
import { waitForLayers } from '../../deploy/local/layers';
import { bookingStackClients, testRoute } from '../support/booking-stack';
import { loadWindowConfig } from '../../shared/config/window-config';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const MINUTE_MS = 60_000;
/**
 * Where in its minute (ms after it) a pane deadline may fall: the scheduler calls fireWindows on each minute and its
 * timer loop runs until 58 s after (OFFVIA_FIRE_WINDOWS_LOOP_MS), polling for new timers at most every 5 s
 * (OFFVIA_FIRE_WINDOWS_POLL_MS); a deadline 8 to 50 s into a minute is certainly served by a looping run.
 */
const DEADLINE_IN_MINUTE_MS = { min: 8_000, max: 50_000 } as const;
/** Publish to receipt by ingestBooking, at most, for placing the deadline (a loaded machine takes a second or two). */
const RECEIPT_MS = 2_000;

/** When the stack's scheduler started (its ready file, written by stack.sh), epoch ms; now when unknown. */
function schedulerStartedMs(): number {
  const dir = process.env.OFFVIA_STACK_DIR ?? path.resolve(__dirname, '../../.local/stack');
  try {
    return statSync(path.join(dir, 'scheduler.ready')).mtimeMs;
  } catch {
    return Date.now();
  }
}

/**
 * How long to wait before publishing, ms: until a publish whose deadline (receipt + `delayMs`) falls inside
 * DEADLINE_IN_MINUTE_MS of a minute whose scheduled fireWindows run comes after the scheduler started: at most about
 * 20 s on a stack up for a minute, against 33 s on average for waiting until just after the next minute.
 */
function waitBeforePublishMs(nowMs: number, delayMs: number, startedMs: number): number {
  for (let waitMs = 0; ; waitMs += 500) {
    // Received between the publish and RECEIPT_MS after it: the deadline lies in [earliest, earliest + RECEIPT_MS].
    const earliestMs = nowMs + waitMs + delayMs;
    const inMinuteMs = earliestMs % MINUTE_MS;
    const inside =
      inMinuteMs >= DEADLINE_IN_MINUTE_MS.min &&
      inMinuteMs + RECEIPT_MS <= DEADLINE_IN_MINUTE_MS.max;
    if (inside && earliestMs - inMinuteMs > startedMs) return waitMs;
  }
}

describe('e2e: an early pane fires on its processing-time timer with no further element', function () {
  this.timeout(300_000);
  const { env, topic, bq } = bookingStackClients();

  before(function () {
    if (!process.env.OFFVIA_FIRE_WINDOWS_URL) {
      throw new Error('the local stack is not running: run through `npm test`');
    }
  });

  it('writes the EARLY pane to gold by the deadline + 5 s', async () => {
    const config = loadWindowConfig(process.env);
    const delayMs = config.strategy.trigger.earlyFirings?.processingTimeDelayMs;
    assert.ok(delayMs !== undefined, 'the stack runs the lab strategy, with early firings');
    // The stack's scheduler calls fireWindows on each minute; its run loops until just before the next. Publish so
    // that the deadline falls well inside a minute whose run is certainly looping (a fresh stack has had no tick yet).
    await sleep(waitBeforePublishMs(Date.now(), delayMs, schedulerStartedMs()));

    const { origin, destination } = testRoute('Y');
    // Two minutes ahead (the contract accepts 5): the event never moves the watermark (it is beyond its receipt +
    // OFFVIA_WATERMARK_MAX_FUTURE_SKEW_MS), so other tests' traffic cannot close its window before the early pane.
    const eventTimeMs = Date.now() + 120_000;
    const bookingId = `${origin}-timer`;
    const publishedAtMs = Date.now();
    const id = await topic.publishMessage({
      data: Buffer.from(
        JSON.stringify({
          booking_id: bookingId,
          passenger_id: 'PAX-1',
          flight_number: 'OF-7',
          origin,
          destination,
          fare: '42.5',
          currency: 'EUR',
          event_time: new Date(eventTimeMs).toISOString(),
        }),
      ),
    });
    assert.ok((await waitForLayers(bq, env.projectId, [id], 60_000)).complete, 'in Silver');
    // The pane's first element arrived when ingestBooking received the message: Silver's ingestion_timestamp.
    const [silver] = await bq.query({
      query: `SELECT UNIX_MILLIS(ingestion_timestamp) AS received_ms
              FROM \`${env.projectId}.offvia_silver.fact_bookings\` WHERE booking_id = @bookingId`,
      params: { bookingId },
    });
    const receivedMs = Number((silver as { received_ms: number }[])[0]?.received_ms);
    assert.ok(receivedMs >= publishedAtMs - 1_000, `received ${receivedMs}`);
    const deadlineMs = receivedMs + delayMs;

    const routeKey = `${origin}-${destination}-EUR`;
    let pane: { emitted_ms: number; pane_timing: string; booking_count: number } | undefined;
    let seenAtMs = Number.POSITIVE_INFINITY;
    while (Date.now() < deadlineMs + 20_000) {
      const [rows] = await bq.query({
        query: `SELECT UNIX_MILLIS(emitted_at) AS emitted_ms, pane_timing, booking_count
                FROM \`${env.projectId}.offvia_gold.route_panes\`
                WHERE route_key = @routeKey ORDER BY pane_index LIMIT 1`,
        params: { routeKey },
      });
      pane = (rows as NonNullable<typeof pane>[])[0];
      if (pane !== undefined) {
        seenAtMs = Date.now();
        break;
      }
      await sleep(500);
    }
    assert.ok(pane !== undefined, `no pane for ${routeKey} within 20 s of its deadline`);
    console.log(
      `      EARLY pane fired ${pane.emitted_ms - deadlineMs} ms after its deadline, seen in gold after ` +
        `${seenAtMs - deadlineMs} ms`,
    );
    assert.equal(pane.pane_timing, 'EARLY');
    assert.equal(pane.booking_count, 1);
    // Never before its deadline (Beam: the timer fires at pt >= first element + delay) ...
    assert.ok(pane.emitted_ms >= deadlineMs, `fired ${deadlineMs - pane.emitted_ms} ms early`);
    // ... and in gold within 5 s of it (the query polls every 500 ms, plus its own round trip).
    assert.ok(
      seenAtMs <= deadlineMs + 5_000,
      `in gold ${seenAtMs - deadlineMs} ms after the deadline (fired ${pane.emitted_ms - deadlineMs} ms after it)`,
    );
  });
});
