// Prints the functions the local stack serves, one `entryPoint|signature|defaultPort` line each, from the pipeline
// registry: stack.sh runs it once at `up` and keeps the list in the stack directory for its other commands.
import { PIPELINES } from '../../shared/pipelines';
import { localFunctions } from './resources';

for (const f of localFunctions(PIPELINES)) {
  process.stdout.write(`${f.entryPoint}|${f.signature}|${f.defaultPort}\n`);
}
