// Firestore operations counted at the SDK, below every store and tracker: the billed document reads, writes and
// deletes and the transactions of one client, in total and per collection (which aggregation or tracker caused them).
import { Transform } from 'node:stream';
import type { Firestore } from '@google-cloud/firestore';
import { PRICES } from './cost';

/** Billed operations of one collection path (`{namespace…}/{collection}`, the root's first segment left out). */
export interface OpsTally {
  reads: number;
  writes: number;
  deletes: number;
}

/** What {@link countFirestoreOps} counts, from the moment it was installed. */
export interface FirestoreOps extends OpsTally {
  /** Transactions committed (a commit naming a transaction). */
  transactions: number;
  /** Transactions rolled back (contention retries and failed attempts). */
  rollbacks: number;
  /** Commits outside a transaction (batches, single writes). */
  batchCommits: number;
  /** Per collection path: which document family the operations touched. */
  readonly byCollection: Map<string, OpsTally>;
}

/** The gRPC surface of the client the counter wraps (internal to the SDK, stable across its 7.x releases). */
interface RequestFunnel {
  request(method: string, request: unknown, tag: string, retry?: unknown): Promise<unknown>;
  requestStream(
    method: string,
    bidirectional: boolean,
    request: unknown,
    tag: string,
  ): Promise<NodeJS.ReadableStream>;
}

interface CommitRequest {
  readonly transaction?: unknown;
  readonly writes?: readonly { readonly update?: { name?: string }; readonly delete?: string }[];
}

/**
 * Counts `db`'s billed operations from now on, by wrapping the SDK's request funnel: a commit's writes and deletes
 * (a write carrying only a transform counts as a write), a batch get's requested documents (found or missing: each
 * is a billed read), a query's returned documents (at least one read), an aggregation query as one read. Firestore
 * pricing (Standard edition) bills exactly these; the counts do not depend on any store's own bookkeeping.
 * @returns the live tally (mutated as requests are made)
 */
export function countFirestoreOps(db: Firestore): FirestoreOps {
  const ops: FirestoreOps = {
    reads: 0,
    writes: 0,
    deletes: 0,
    transactions: 0,
    rollbacks: 0,
    batchCommits: 0,
    byCollection: new Map(),
  };
  const tally = (name: string | undefined, field: keyof OpsTally, n = 1) => {
    ops[field] += n;
    const path = collectionOf(name);
    const t = ops.byCollection.get(path) ?? { reads: 0, writes: 0, deletes: 0 };
    t[field] += n;
    ops.byCollection.set(path, t);
  };
  const funnel = db as unknown as RequestFunnel;
  const request = funnel.request.bind(funnel);
  const requestStream = funnel.requestStream.bind(funnel);
  funnel.request = (method, req, tag, retry) => {
    if (method === 'commit') {
      const commit = req as CommitRequest;
      if (commit.transaction !== undefined && commit.transaction !== null) ops.transactions++;
      else ops.batchCommits++;
      for (const w of commit.writes ?? []) {
        if (w.delete !== undefined) tally(w.delete, 'deletes');
        else tally(w.update?.name, 'writes');
      }
    } else if (method === 'rollback') ops.rollbacks++;
    return request(method, req, tag, retry);
  };
  funnel.requestStream = async (method, bidirectional, req, tag) => {
    if (method === 'batchGetDocuments') {
      for (const name of (req as { documents?: string[] }).documents ?? []) tally(name, 'reads');
      return requestStream(method, bidirectional, req, tag);
    }
    if (method !== 'runQuery' && method !== 'runAggregationQuery') {
      return requestStream(method, bidirectional, req, tag);
    }
    const parent = (req as { parent?: string }).parent;
    const stream = await requestStream(method, bidirectional, req, tag);
    let docs = 0;
    const counted = new Transform({
      objectMode: true,
      transform(chunk: { document?: { name?: string } }, _enc, done) {
        if (method === 'runQuery' && chunk.document?.name !== undefined) {
          docs++;
          tally(chunk.document.name, 'reads');
        }
        done(null, chunk);
      },
      flush(done) {
        // A query that returns nothing is billed one read; an aggregation query one per 1,000 entries (here: one).
        if (docs === 0) tally(`${parent ?? ''}/query/_`, 'reads');
        done();
      },
    });
    stream.on('error', (err: Error) => counted.destroy(err));
    return stream.pipe(counted);
  };
  return ops;
}

/** `root/ns/…/collection/doc` → `ns/…/collection` (the run's random root left out); `?` when unknown. */
function collectionOf(name: string | undefined): string {
  if (name === undefined) return '?';
  const at = name.indexOf('/documents/');
  const segments = (at < 0 ? name : name.slice(at + '/documents/'.length)).split('/');
  return segments.slice(1, -1).join('/') || segments.join('/');
}

/** The tally as lines per message: the total and each collection, most expensive first. */
export function opsLines(ops: FirestoreOps, messages: number): string[] {
  const per = (n: number) => (n / messages).toFixed(3);
  const usd = (t: OpsTally) => firestoreUsdPerMillion(t, messages);
  return [
    `Firestore at the SDK, per message: reads ${per(ops.reads)}, writes ${per(ops.writes)}, deletes ` +
      `${per(ops.deletes)}, transactions ${per(ops.transactions)} (rollbacks ${per(ops.rollbacks)}), other commits ` +
      `${per(ops.batchCommits)}: USD ${usd(ops).toFixed(2)} per million messages`,
    ...[...ops.byCollection]
      .sort(([, a], [, b]) => usd(b) - usd(a))
      .map(
        ([path, t]) =>
          `  ${path}: reads ${per(t.reads)}, writes ${per(t.writes)}, deletes ${per(t.deletes)} (USD ${usd(t).toFixed(2)}/M)`,
      ),
  ];
}

/** Firestore list prices (`PRICES`) applied to `t` over `messages`: USD per million messages. */
export function firestoreUsdPerMillion(t: OpsTally, messages: number): number {
  const perMillion = 1e6 / 1e5 / messages;
  return (
    (t.reads * PRICES.firestoreReadsPer100k +
      t.writes * PRICES.firestoreWritesPer100k +
      t.deletes * PRICES.firestoreDeletesPer100k) *
    perMillion
  );
}
