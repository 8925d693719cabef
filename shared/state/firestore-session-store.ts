// The session layout on Firestore: one document per key (`sessionKeys/g<group>~<key>`) holding the key's open
// sessions and their dedup ids; the watermark, leases, dropped-late counters and pane outbox are the shared ones.
import type { DocumentReference, Transaction } from '@google-cloud/firestore';
import * as v from 'valibot';
import { TransientError } from '../errors';
import type { JsonValue, KeyState, WindowState } from '../windowing';
import {
  FirestoreTransaction,
  FirestoreWindowStore,
  type FirestoreWindowStoreOptions,
} from './firestore-window-store';
import { keyGroupOf, keyIdPart } from './ids';
import type {
  SessionStore,
  SessionTimers,
  SessionTransaction,
  StoredSessionKey,
} from './session-store';

/** The session layout's collection under `{root}/{pipeline}`. */
export const SESSION_COLLECTION = 'sessionKeys';

/** Options of the session store. */
export interface FirestoreSessionStoreOptions<
  Acc extends JsonValue,
> extends FirestoreWindowStoreOptions<Acc> {
  /** Key groups (`OFFVIA_WINDOW_KEY_GROUPS`): the document id starts with the key's group, spreading the ids. */
  readonly keyGroups: number;
}

const int = v.pipe(v.number(), v.safeInteger());
const SessionKeyDoc = v.object({
  key: v.string(),
  group: int,
  state_json: v.string(),
  seen: v.record(v.string(), v.string()),
  event_timer_ms: v.nullable(int),
  processing_timer_ms: v.nullable(int),
});
const StateJson = v.object({
  inputWatermarkMs: int,
  processingTimeMs: int,
  windows: v.array(
    v.object({
      window: v.object({ startMs: int, endMs: int }),
      pane: v.object({
        phase: v.picklist(['EARLY', 'LATE', 'CLOSED']),
        panesEmitted: int,
        nonEarlyPanesEmitted: int,
      }),
      contribution: v.object({
        accumulator: v.unknown(),
        elementsInPane: int,
        firstElementInPaneAtMs: v.nullable(int),
      }),
    }),
  ),
});

/**
 * The session layout on Firestore: `sessionKeys/g<group>~<key>` holds `key`, `group`, `state_json` and `seen` (the
 * `StoredSessionKey`) and the timers `event_timer_ms` / `processing_timer_ms` (fireWindows' range queries); deleted
 * with the key's last session. The watermark, leases, `droppedLate` and `paneOutbox` are the shared documents.
 */
export class FirestoreSessionStore<Acc extends JsonValue>
  extends FirestoreWindowStore<Acc>
  implements SessionStore<Acc>
{
  constructor(
    db: ConstructorParameters<typeof FirestoreWindowStore<Acc>>[0],
    private readonly sessionOptions: FirestoreSessionStoreOptions<Acc>,
  ) {
    super(db, sessionOptions);
  }

  /** The document of a key's sessions. */
  sessionRef(key: string): DocumentReference {
    const group = keyGroupOf(key, this.keyGroups);
    return this.collection(SESSION_COLLECTION).doc(`g${group}~${keyIdPart(key)}`);
  }

  /** Parses a session document. @throws TransientError naming the document when it is malformed */
  sessionOf(where: string, data: unknown): StoredSessionKey<Acc> {
    const doc = this.parse(where, SessionKeyDoc, data);
    const state = this.parse(where, StateJson, this.parseJson(where, 'state_json', doc.state_json));
    const windows = state.windows.map((w): WindowState<Acc> => ({
      window: w.window,
      pane: w.pane,
      contribution: {
        accumulator: this.sessionOptions.parseAccumulator(w.contribution.accumulator),
        elementsInPane: w.contribution.elementsInPane,
        firstElementInPaneAtMs: w.contribution.firstElementInPaneAtMs,
      },
    }));
    const keyState: KeyState<Acc> = {
      key: doc.key,
      inputWatermarkMs: state.inputWatermarkMs,
      processingTimeMs: state.processingTimeMs,
      windows,
    };
    return { state: keyState, seen: doc.seen };
  }

  protected override newAttempt(tx: Transaction): FirestoreTransaction<Acc> {
    return new SessionAttempt(tx, this);
  }

  transactSessions<T>(
    operation: string,
    fn: (tx: SessionTransaction<Acc>) => Promise<T>,
  ): Promise<T> {
    return this.transact(operation, (tx) => fn(tx as SessionAttempt<Acc>));
  }

  async findSessionKeysDue(
    groups: readonly number[] | null,
    watermarkMs: number,
    processingTimeMs: number,
    limit: number,
  ): Promise<string[]> {
    const collection = this.collection(SESSION_COLLECTION);
    // A partition's query filters on the key's group (composite indexes (group, timer), as the key groups' own);
    // all keys at once is the two single-field range queries.
    const slices: (number[] | null)[] = [];
    if (groups === null) slices.push(null);
    else for (let i = 0; i < groups.length; i += 30) slices.push(groups.slice(i, i + 30));
    const keys: string[] = [];
    for (const slice of slices) {
      const scoped = slice === null ? collection : collection.where('group', 'in', slice);
      const [byEvent, byClock] = await this.call('query due session keys', () =>
        Promise.all([
          scoped
            .where('event_timer_ms', '<', watermarkMs)
            .orderBy('event_timer_ms')
            .select('key')
            .limit(limit)
            .get(),
          scoped
            .where('processing_timer_ms', '<=', processingTimeMs)
            .orderBy('processing_timer_ms')
            .select('key')
            .limit(limit)
            .get(),
        ]),
      );
      this.metrics.reads += Math.max(1, byEvent.size) + Math.max(1, byClock.size);
      for (const d of [...byEvent.docs, ...byClock.docs]) {
        const key: unknown = d.get('key');
        if (typeof key !== 'string') {
          throw new TransientError(
            `firestore read ${SESSION_COLLECTION}/${d.id}`,
            'malformed document: key is not a string',
          );
        }
        keys.push(key);
      }
    }
    return [...new Set(keys)];
  }

  async earliestSessionTimerMs(): Promise<number | null> {
    const snap = await this.call('query earliest session timer', () =>
      this.collection(SESSION_COLLECTION)
        .where('processing_timer_ms', '!=', null)
        .orderBy('processing_timer_ms')
        .select('processing_timer_ms')
        .limit(1)
        .get(),
    );
    this.metrics.reads += 1;
    const value: unknown = snap.docs[0]?.get('processing_timer_ms');
    return typeof value === 'number' ? value : null;
  }
}

/** One attempt of a session transaction: the shared records (outbox, dropped counters) plus session documents. */
class SessionAttempt<Acc extends JsonValue>
  extends FirestoreTransaction<Acc>
  implements SessionTransaction<Acc>
{
  constructor(
    tx: Transaction,
    private readonly sessions: FirestoreSessionStore<Acc>,
  ) {
    super(tx, sessions);
  }

  async readSessionKey(key: string): Promise<StoredSessionKey<Acc> | null> {
    const ref = this.sessions.sessionRef(key);
    const snap = await this.sessions.sdk(() => this.tx.get(ref));
    this.sessions.metrics.reads++;
    return snap.exists
      ? this.sessions.sessionOf(`${SESSION_COLLECTION}/${ref.id}`, snap.data())
      : null;
  }

  putSessionKey(record: StoredSessionKey<Acc>, timers: SessionTimers): void {
    this.writes++;
    const { state } = record;
    this.tx.set(this.sessions.sessionRef(state.key), {
      key: state.key,
      group: keyGroupOf(state.key, this.sessions.keyGroups),
      state_json: JSON.stringify({
        inputWatermarkMs: state.inputWatermarkMs,
        processingTimeMs: state.processingTimeMs,
        windows: state.windows,
      }),
      seen: { ...record.seen },
      event_timer_ms: timers.eventTimerMs,
      processing_timer_ms: timers.processingTimerMs,
    });
  }

  deleteSessionKey(key: string): void {
    this.deletes++;
    this.tx.delete(this.sessions.sessionRef(key));
  }
}
