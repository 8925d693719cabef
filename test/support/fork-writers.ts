// Runs writer jobs in separate Node processes (child_process.fork), as separate function instances would.
import { fork } from 'node:child_process';
import path from 'node:path';
import type { WriterJob, WriterReport } from './hot-window-writer';

const WRITER = path.join(__dirname, 'hot-window-writer.ts');

/** Forks one process per job, all at once; resolves with their reports, rejects if any fails or times out. */
export function runWriterProcesses(
  jobs: readonly WriterJob[],
  timeoutMs: number,
): Promise<WriterReport[]> {
  return Promise.all(
    jobs.map(
      (job, i) =>
        new Promise<WriterReport>((resolve, reject) => {
          const child = fork(WRITER, [], {
            execArgv: ['--import', 'tsx'],
            env: { ...process.env },
            stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
          });
          let settled = false;
          const timer = setTimeout(() => {
            if (settled) return;
            settled = true;
            child.kill('SIGKILL');
            reject(new Error(`writer ${i} timed out after ${timeoutMs} ms`));
          }, timeoutMs);
          child.on('message', (m: { ok: boolean; report?: WriterReport; error?: string }) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            if (m.ok && m.report) resolve(m.report);
            else reject(new Error(`writer ${i} failed: ${m.error ?? 'no report'}`));
          });
          child.on('exit', (code) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            reject(new Error(`writer ${i} exited with ${code} before reporting`));
          });
          child.send(job);
        }),
    ),
  );
}
