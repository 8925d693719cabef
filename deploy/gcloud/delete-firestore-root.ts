// Deletes every document under one root collection of the system's Firestore database, subcollections included:
// what a single pipeline's `teardown.sh --delete-data` runs for its Firestore namespace. `gcloud firestore
// bulk-delete` cannot: it deletes collection groups across the whole database, and every pipeline's window store
// uses the same subcollection ids under its own root.
//
//   node_modules/.bin/tsx deploy/gcloud/delete-firestore-root.ts --project=P --database=D --root=R
import { parseArgs } from 'node:util';
import { Firestore } from '@google-cloud/firestore';
import { readFirestoreDatabase } from '../../shared/config/ingest-config';

/** A root collection id as the pipeline registry allows it. */
const ROOT = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;

/**
 * Parses the flags.
 * @throws Error, one line, for a missing or malformed flag.
 */
export function parseDeleteRootArgs(args: readonly string[]): {
  project: string;
  database: string;
  root: string;
} {
  const { values } = parseArgs({
    args: [...args],
    options: {
      project: { type: 'string' },
      database: { type: 'string' },
      root: { type: 'string' },
    },
  });
  const { project, database, root } = values;
  if (project === undefined || database === undefined || root === undefined) {
    throw new Error('usage: delete-firestore-root.ts --project=P --database=D --root=COLLECTION');
  }
  // The functions' own rule (`(default)` is refused: the system's state lives in a database of its own).
  readFirestoreDatabase({ OFFVIA_FIRESTORE_DATABASE: database });
  if (!ROOT.test(root)) throw new Error(`--root: ${JSON.stringify(root)} does not match ${ROOT}`);
  return { project, database, root };
}

/**
 * Deletes every document under the root collection `root` of `db`, subcollections at any depth included (documents
 * elsewhere, including collections with the same ids under other roots, are untouched).
 * @returns the number of documents deleted
 */
export async function deleteRoot(db: Firestore, root: string): Promise<number> {
  const writer = db.bulkWriter();
  let deleted = 0;
  writer.onWriteResult(() => {
    deleted += 1;
  });
  await db.recursiveDelete(db.collection(root), writer);
  return deleted;
}

async function main(): Promise<void> {
  let args;
  try {
    args = parseDeleteRootArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
    return;
  }
  const db = new Firestore({ projectId: args.project, databaseId: args.database });
  const deleted = await deleteRoot(db, args.root);
  process.stdout.write(`deleted ${deleted} documents under ${args.root} in ${args.database}\n`);
  await db.terminate();
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
