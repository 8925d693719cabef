// Profiling aid: one in-process ingestBooking run on the running stack.
//   source .local/stack/env && npx tsx bench/probe-inprocess.ts LABEL N CONCURRENCY [KEY=VALUE...]
import { defaultSpec, generateStream } from './lib/stream';
import { runInProcess } from './lib/in-process';

async function main(): Promise<void> {
  const [label = 'probe', n = '500', c = '80', ...kv] = process.argv.slice(2);
  const env: Record<string, string | undefined> = { ...process.env };
  for (const pair of kv) {
    const [k, v] = pair.split('=');
    if (k) env[k] = v;
  }
  const events = generateStream(defaultSpec(Date.now() - Number(n) * 20, Number(n)));
  const r = await runInProcess(
    `${label}${Date.now()}`,
    events,
    env,
    Number(c),
    'bench/out/probe.log',
  );
  console.log(JSON.stringify({ ...r, outcomes: `${r.outcomes.length} outcomes` }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
