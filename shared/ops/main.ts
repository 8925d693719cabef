// Entry point of the `offvia` command (bin/offvia.cjs, `npm run offvia`): runs the CLI and exits with its code.
import { main } from './cli';

/** What the Firestore client rejects a call with once `terminate()` (OpsContext.close) has run. */
const FIRESTORE_TERMINATED = 'The client has already been terminated';

// A Firestore call abandoned at its deadline (withDeadline in context.ts) goes on retrying in the background; once
// the command has failed and closed the client, that retry rejects where nothing awaits it any more. The operator
// already has the one-line error and the exit code: it must not end the process with a stack trace.
process.on('unhandledRejection', (reason: unknown) => {
  if (reason instanceof Error && reason.message === FIRESTORE_TERMINATED) return;
  process.stderr.write(
    `offvia: internal error: ${reason instanceof Error ? reason.message : String(reason)}\n`,
  );
  process.exit(1);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // main() turns every error into a line and a code; reaching here is a bug in offvia itself.
    process.stderr.write(
      `offvia: internal error: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exitCode = 1;
  },
);
