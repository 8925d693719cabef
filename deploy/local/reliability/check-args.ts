// Checks the reliability harness's arguments without starting anything: run by deploy/local/reliability.sh before
// the stack. Exit status: 0 good (go ahead), 2 usage error (printed), 10 usage printed for --help (see args.ts).
import { checkArgs } from './args';

process.exitCode = checkArgs(
  process.argv.slice(2),
  (text) => console.log(text),
  (text) => console.error(text),
);
