// The files `gcloud functions deploy --source=.` uploads: what `.gcloudignore` lets through, with gitignore rules
// (the `ignore` package), walked the way gcloud walks (an ignored directory is not entered).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ignore from 'ignore';

/**
 * The paths (relative, `/`-separated, sorted) under `sourceDir` that gcloud would upload.
 * @throws Error when `sourceDir` has no `.gcloudignore` (gcloud would upload nearly everything).
 */
export function filesForUpload(sourceDir: string): string[] {
  const rules = readFileSync(path.join(sourceDir, '.gcloudignore'), 'utf8');
  const matcher = ignore().add(rules);
  const files: string[] = [];
  const walk = (relDir: string): void => {
    const entries = readdirSync(path.join(sourceDir, relDir), { withFileTypes: true });
    for (const entry of entries) {
      const rel = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!matcher.ignores(`${rel}/`)) walk(rel);
      } else if ((entry.isFile() || entry.isSymbolicLink()) && !matcher.ignores(rel)) {
        files.push(rel);
      }
    }
  };
  walk('');
  return files.sort();
}

/** A digest of the uploaded source: every path and its bytes (64 hex characters). */
export function sourceDigest(sourceDir: string, files: readonly string[]): string {
  const hash = createHash('sha256');
  for (const file of files) {
    const bytes = readFileSync(path.join(sourceDir, file));
    hash.update(`${file}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest('hex');
}
