// The main command's body: publish the lab's three events (or a JSON-lines file), wait, print every layer, check;
// with `--pipeline telemetry`, the telemetry simulator (deploy/local/telemetry-demo/); with `--samples` or for
// any other pipeline, its sample messages and where each ended (deploy/local/sample-demo.ts).
import { readFileSync } from 'node:fs';
import { PubSub } from '@google-cloud/pubsub';
import { formatTable, stackBigQuery, stackEnv, waitForLayers, type Layers } from './layers';
import { DemoUsageError, parseDemoArgs, usageLine, USAGE_EXIT } from './demo-args';
import { checkLabWindows, fireAndReadWindows, formatWindowsReport } from './demo-windows';
import { runTelemetryDemoMain } from './telemetry-demo/run';
import { type DemoMessage, runSampleDemo } from './sample-demo';
import { pipelineNamed } from '../../shared/pipelines';
import { bookingSamples } from '../../shared/pipelines/booking/samples';

/**
 * The lab's acceptance-test messages, verbatim (offvia-streaming-lab, "Test con Eventi Validi e Non Validi"): the
 * booking definition's samples.
 */
export const LAB_EVENTS: readonly string[] = bookingSamples().map((s) => s.data);

/** The lab's expected outcome; returns the failed checks (empty when it passed). */
export function checkLabOutcome(layers: Layers, ids: readonly string[]): string[] {
  const failures: string[] = [];
  const [valid, negative, broken] = ids;
  if (layers.bronze.length !== 3)
    failures.push(`Bronze has ${layers.bronze.length} rows, expected 3`);
  const silverIds = layers.silver.map((r) => r.booking_id);
  if (silverIds.length !== 1 || silverIds[0] !== 'BK-90210') {
    failures.push(`Silver holds ${JSON.stringify(silverIds)}, expected exactly ["BK-90210"]`);
  }
  const stageOf = (id: string | undefined) =>
    layers.quarantine.filter((r) => r.source_message_id === id).map((r) => r.error_stage);
  if (JSON.stringify(stageOf(negative)) !== '["BUSINESS_RULE_VALIDATION"]') {
    failures.push(
      `negative fare quarantined as ${JSON.stringify(stageOf(negative))}, expected BUSINESS_RULE_VALIDATION`,
    );
  }
  if (JSON.stringify(stageOf(broken)) !== '["PARSE_JSON"]') {
    failures.push(
      `broken JSON quarantined as ${JSON.stringify(stageOf(broken))}, expected PARSE_JSON`,
    );
  }
  if (layers.quarantine.length !== 2)
    failures.push(`quarantine has ${layers.quarantine.length} rows, expected 2`);
  if (stageOf(valid).length > 0) failures.push('BK-90210 was quarantined');
  if (layers.badData.length > 0)
    failures.push(`bad data has ${layers.badData.length} rows, expected 0`);
  return failures;
}

/** Every published message in exactly one of Silver, quarantine, bad data, the schema-retry store; all in Bronze. */
export function checkEveryMessageRouted(layers: Layers, ids: readonly string[]): string[] {
  const failures: string[] = [];
  const count = new Map<string, number>();
  for (const r of [
    ...layers.silver,
    ...layers.quarantine,
    ...layers.badData,
    ...layers.retryStore,
  ]) {
    const id = String(r.source_message_id);
    count.set(id, (count.get(id) ?? 0) + 1);
  }
  const bronze = new Set(layers.bronze.map((r) => String(r.message_id)));
  for (const id of ids) {
    if (!bronze.has(id)) failures.push(`message ${id} missing from Bronze`);
    const n = count.get(id) ?? 0;
    if (n !== 1)
      failures.push(
        `message ${id} is in ${n} of Silver/quarantine/bad data/schema-retry store, expected exactly 1`,
      );
  }
  return failures;
}

/**
 * One message per line: the line's text without its line ending, as UTF-8. Blank lines are skipped (and counted on stderr): a JSON-lines file
 * cannot hold an empty message; publish one with the Pub/Sub client to try that case.
 */
export function readEventsFile(file: string): string[] {
  const lines = readFileSync(file, 'utf8').split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop(); // the newline that ends the last line
  const events = lines.filter((l) => l.trim() !== '');
  const skipped = lines.length - events.length;
  if (skipped > 0) process.stderr.write(`demo: skipped ${skipped} blank line(s) in ${file}\n`);
  return events;
}

async function main(): Promise<number> {
  let options: ReturnType<typeof parseDemoArgs>;
  try {
    options = parseDemoArgs(
      process.argv.slice(2),
      process.env.OFFVIA_DEMO_BASE_DIR ?? process.cwd(),
    );
  } catch (error) {
    if (!(error instanceof DemoUsageError)) throw error;
    process.stderr.write(usageLine(error));
    return USAGE_EXIT;
  }
  if (options === 'help') return 0;
  if (options.run === 'simulator') return runTelemetryDemoMain(options);
  if (options.run === 'lab') return bookingDemo(options.file);
  const pipeline = pipelineNamed(options.pipeline);
  const messages: DemoMessage[] =
    options.file === undefined
      ? [...pipeline.samples(Date.now())]
      : readEventsFile(options.file).map((data, i) => ({
          description: `line ${i + 1}`,
          data,
          attributes: {},
          expect: undefined,
        }));
  return runSampleDemo(pipeline, messages);
}

async function bookingDemo(file: string | undefined): Promise<number> {
  const events = file ? readEventsFile(file) : [...LAB_EVENTS];
  if (events.length === 0) {
    process.stderr.write(`demo: ${file} has no events (one JSON message per non-blank line)\n`);
    return 2;
  }
  const env = stackEnv();
  const pubsub = new PubSub({ projectId: env.projectId });
  const topic = pubsub.topic(process.env.OFFVIA_TOPIC ?? 'booking-events');
  const started = Date.now();
  const ids = await Promise.all(
    events.map((e) => topic.publishMessage({ data: Buffer.from(e, 'utf8') })),
  );
  process.stdout.write(`published ${ids.length} events to ${topic.name}\n`);
  const bq = stackBigQuery(env);
  const timeoutMs = Number(process.env.OFFVIA_DEMO_TIMEOUT_MS ?? 60_000 + events.length * 50);
  const { layers, complete } = await waitForLayers(bq, env.projectId, ids, timeoutMs);
  process.stdout.write(`waited ${Date.now() - started} ms for the layers\n\n`);
  const limit = 50;
  const show = (title: string, rows: Layers['bronze']) =>
    process.stdout.write(
      formatTable(title, rows.slice(0, limit)) +
        (rows.length > limit ? `… ${rows.length - limit} more\n` : '') +
        '\n',
    );
  show('Bronze  offvia_bronze.raw_bookings', layers.bronze);
  show('Silver  offvia_silver.fact_bookings', layers.silver);
  show('Quarantine  offvia_quarantine.poisoned_events', layers.quarantine);
  if (layers.quarantine.length > 0) {
    process.stdout.write('Quarantine reasons (full text):\n');
    for (const r of layers.quarantine.slice(0, limit)) {
      process.stdout.write(
        `  message ${String(r.source_message_id)} ${String(r.error_stage)}: ${String(r.error_reason)}\n`,
      );
    }
    process.stdout.write('\n');
  }
  show('Bad data  offvia_quarantine.bad_data', layers.badData);
  show(
    'Schema-retry store (Firestore; rows waiting for a new column, see docs/schema-drift.md)',
    layers.retryStore,
  );
  // Gold counts every contract-valid booking, also those waiting in the schema-retry store (docs/windows.md).
  const windows = await fireAndReadWindows(bq, env.projectId, [
    ...layers.silver,
    ...layers.retryStore,
  ]);
  process.stdout.write(formatWindowsReport(windows));
  const failures = [
    ...(complete ? [] : [`not every message landed within ${timeoutMs} ms`]),
    ...checkEveryMessageRouted(layers, ids),
    ...(file ? [] : [...checkLabOutcome(layers, ids), ...checkLabWindows(windows)]),
  ];
  await pubsub.close();
  if (failures.length > 0) {
    process.stdout.write(`FAILED:\n${failures.map((f) => `  - ${f}`).join('\n')}\n`);
    return 1;
  }
  process.stdout.write(
    file
      ? `OK: all ${ids.length} messages are in Bronze and each in exactly one of Silver, quarantine, bad data, ` +
          `the schema-retry store\n`
      : "OK: the lab's acceptance test passed (Bronze 3, Silver BK-90210, quarantine BUSINESS_RULE_VALIDATION + PARSE_JSON; BK-90210 in its gold window or counted as dropped)\n",
  );
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(
        `demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
      process.exit(1);
    },
  );
}
