// The local stack's clients for a booking end-to-end suite (made when the suite is declared, Pub/Sub closed after it),
// the routes of its own that each suite books on, and booking's window state as fireWindows reads it.
import { randomBytes } from 'node:crypto';
import type { BigQuery } from '@google-cloud/bigquery';
import type { Firestore } from '@google-cloud/firestore';
import { PubSub, type Topic } from '@google-cloud/pubsub';
import { stackBigQuery, stackEnv, type StackEnv } from '../../deploy/local/layers';
import { Logger } from '../../shared/logging/logger';
import { createBookingWindows, type BookingWindows } from './booking-window-assembly';
import { emulatorFirestore } from './firestore-windows';

/** The stack's settings and clients; `topic` is booking's ingest topic (`booking-events`). */
export interface BookingStackClients {
  env: StackEnv;
  pubsub: PubSub;
  topic: Topic;
  bq: BigQuery;
}

/**
 * Opens the clients for the enclosing mocha `describe` block and registers an `after` hook that closes Pub/Sub.
 * Reads the stack's environment variables (see `stackEnv`); throws nothing when the stack is down: the suites'
 * own `before` hooks say so.
 */
export function bookingStackClients(): BookingStackClients {
  const env = stackEnv();
  const pubsub = new PubSub({ projectId: env.projectId });
  after(() => pubsub.close());
  return { env, pubsub, topic: pubsub.topic('booking-events'), bq: stackBigQuery(env) };
}

/**
 * An airport code no other test uses, so the caller's routes and their gold panes are its own: three random upper-case
 * letters, the first being `first` when given (a letter of the test's own, e.g. 'Y', keeps it apart at a glance).
 */
export function testAirport(first = ''): string {
  const letters = [...randomBytes(3)].map((b) => String.fromCharCode(65 + (b % 26))).join('');
  return (first + letters).slice(0, 3);
}

/** A route of two different `testAirport(first)` codes. */
export function testRoute(first = ''): { origin: string; destination: string } {
  const origin = testAirport(first);
  let destination = testAirport(first);
  while (destination === origin) destination = testAirport(first);
  return { origin, destination };
}

/**
 * A booking payload of a suite: `booking_id` `BK-{tag}-{n}` and `passenger_id` `PAX-{n}` first, then `fields` (the
 * flight, route, fare, currency, event time and any extra field) in their order.
 */
export function bookingJson(tag: string, n: number, fields: Record<string, unknown>): string {
  return JSON.stringify({ booking_id: `BK-${tag}-${n}`, passenger_id: `PAX-${n}`, ...fields });
}

/** The functions' booking window state on the stack's Firestore emulator, and the client it reads with. */
export interface StackBookingWindows {
  readonly firestore: Firestore;
  readonly windows: BookingWindows;
}

/**
 * Booking's window state as the stack's fireWindows reads it (its watermark, dropped-late counters), for the
 * enclosing mocha `describe` block: a `before` hook checks that the stack runs (fireWindows' URL and the Firestore
 * emulator) and opens it, an `after` hook terminates the client. The returned function answers it inside the
 * suite's tests. @throws Error from the hook when the stack is not running, or from the function before the hook ran
 */
export function stackBookingWindows(suite: string): () => StackBookingWindows {
  let opened: StackBookingWindows | undefined;
  before(function () {
    if (!process.env.OFFVIA_FIRE_WINDOWS_URL || !process.env.FIRESTORE_EMULATOR_HOST) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
    const firestore = emulatorFirestore();
    const windows = createBookingWindows(process.env, new Logger(suite, () => undefined), {
      firestore,
    });
    opened = { firestore, windows };
  });
  after(() => opened?.firestore.terminate());
  return () => {
    if (opened === undefined)
      throw new Error(`${suite}: the window state is opened by the suite's before hook`);
    return opened;
  };
}
