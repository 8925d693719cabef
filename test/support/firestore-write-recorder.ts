// Records what a Firestore client writes, from the commit and batchWrite requests it sends (transactions, batches,
// BulkWriter and single-document writes all end in one of those): the collection id of each written document and
// the top-level fields each write sets, masks or transforms. The client keeps talking to the emulator unchanged.
import type { Firestore } from '@google-cloud/firestore';

/** Collection id → top-level field names written there (empty set: only deletes or empty documents). */
export type WrittenFields = Map<string, Set<string>>;

interface WireWrite {
  update?: { name: string; fields?: Record<string, unknown> };
  delete?: string;
  updateMask?: { fieldPaths?: string[] };
  updateTransforms?: { fieldPath: string }[];
}

/** The collection id of a document resource name (`projects/…/documents/a/b/c/d` → `c`). */
function collectionIdOf(name: string): string {
  const segments = name.split('/');
  return segments[segments.length - 2] ?? name;
}

/** The top-level field of a field path (`w.\`k\`.c` → `w`; a backquoted first segment is unquoted). */
function topLevel(fieldPath: string): string {
  const quoted = /^`((?:[^`\\]|\\.)*)`/.exec(fieldPath);
  return quoted ? (quoted[1] ?? '').replace(/\\(.)/g, '$1') : (fieldPath.split('.')[0] ?? '');
}

/**
 * Wraps `db`'s request method (the client's one exit for commits) and answers the fields written so far. It relies
 * on the client's internal `request(methodName, request, …)` (client 8.x); a test fails loudly if that ever changes,
 * because it would then record nothing.
 */
export function recordWrites(db: Firestore): WrittenFields {
  const written: WrittenFields = new Map();
  const note = (collection: string, fields: Iterable<string>) => {
    const set = written.get(collection) ?? new Set<string>();
    for (const f of fields) set.add(f);
    written.set(collection, set);
  };
  const client = db as unknown as {
    request: (method: string, request: { writes?: WireWrite[] }, ...rest: unknown[]) => unknown;
  };
  const request = client.request.bind(client);
  client.request = (method, req, ...rest) => {
    if (method === 'commit' || method === 'batchWrite') {
      for (const w of req.writes ?? []) {
        const name = w.update?.name ?? w.delete;
        if (name === undefined) continue;
        note(collectionIdOf(name), [
          ...Object.keys(w.update?.fields ?? {}),
          ...(w.updateMask?.fieldPaths ?? []).map(topLevel),
          ...(w.updateTransforms ?? []).map((t) => topLevel(t.fieldPath)),
        ]);
      }
    }
    return request(method, req, ...rest);
  };
  return written;
}
