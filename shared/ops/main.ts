// Entry point of the `offvia` command (bin/offvia.cjs, `npm run offvia`): runs the CLI and exits with its code.
import { main } from './cli';

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
