// Generates docs/configuration.md from the variable specs in shared/config, the same specs the loaders read, so
// the documented names, defaults and ranges are the enforced ones. `npm run docs:config` writes the file;
// `npm run docs:config -- --check` exits 1 when the committed file differs (the unit test checks the same).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_VAR_GROUPS } from '../shared/config/registry';
import type { IntVarSpec, VarGroup, VarSpec, VarUnit } from '../shared/config/spec';
import { PIPELINES } from '../shared/pipelines';
import { functionEnvName, localFunctionPorts, localFunctions } from '../deploy/local/resources';

/** Where the reference is written, relative to the repository root. */
export const CONFIG_REFERENCE_PATH = 'docs/configuration.md';

/** A variable read only by tooling (local stack, benchmarks, test harnesses), documented by hand below. */
export interface ToolingVar {
  readonly name: string;
  /** The default as text, exactly as the script that reads it has it. */
  readonly default: string;
  readonly meaning: string;
  /** The script builds the name from a function's name (`OFFVIA_<FUNCTION>_PORT`), so it is not in the code as is. */
  readonly builtName?: true;
}

/** A titled list of tooling variables. */
export interface ToolingGroup {
  readonly title: string;
  /** Which scripts read them. */
  readonly readBy: string;
  readonly vars: readonly ToolingVar[];
}

/**
 * The local stack's variables of each function of the registered pipelines: `OFFVIA_<FUNCTION>_PORT` with its
 * default (deploy/local/resources.ts `localFunctionPorts`) and `OFFVIA_<FUNCTION>_URL`, which the stack writes.
 */
function functionVars(): ToolingVar[] {
  const ports = localFunctionPorts(PIPELINES);
  return PIPELINES.flatMap((p) =>
    localFunctions([p]).flatMap((f): ToolingVar[] => {
      const name = `OFFVIA_${functionEnvName(f.entryPoint)}`;
      const port = ports.get(f.entryPoint);
      return [
        {
          name: `${name}_PORT`,
          builtName: true,
          default: `\`${String(port)}\``,
          meaning: `Functions Framework port of \`${f.entryPoint}\` (the ${p.name} pipeline)`,
        },
        {
          name: `${name}_URL`,
          builtName: true,
          default: 'set by the stack',
          meaning: `URL of \`${f.entryPoint}\`, in \`.local/stack/env\``,
        },
      ];
    }),
  );
}

/**
 * Tooling variables from one-line rows `NAME | default | meaning` (Markdown as the table shows it; no `|` inside a
 * field). A leading `*` marks a name the script builds (ToolingVar.builtName).
 * @throws Error for a row without three fields.
 */
function rows(lines: readonly string[]): ToolingVar[] {
  return lines.map((line) => {
    const fields = line.split(' | ');
    const [name = '', value = '', meaning = ''] = fields;
    if (fields.length !== 3) throw new Error(`tooling row without three fields: ${line}`);
    const built = name.startsWith('*');
    return {
      name: built ? name.slice(1) : name,
      default: value,
      meaning,
      ...(built && { builtName: true as const }),
    };
  });
}

/**
 * Variables read only by the local stack, benchmarks and test harnesses, hand-written: the unit test fails when a
 * name in the code is in neither this list, the specs, nor `INTERNAL_NAMES`.
 */
export const TOOLING_VAR_GROUPS: readonly ToolingGroup[] = [
  {
    title: 'Local stack',
    readBy:
      '`deploy/local/` (`stack.sh`, `with-stack.sh`, `install.sh`, the stand-ins, `npm run demo`)',
    vars: [
      ...rows([
        'OFFVIA_PROJECT_ID | `offvia-local` | project id of the local stack (the functions read it too, above)',
        'OFFVIA_PUBSUB_PORT | `8085` | Pub/Sub emulator port',
        "OFFVIA_FIRESTORE_PORT | `8086` | Firestore emulator port (the gate's, with `OFFVIA_FIRESTORE_GATE=1`)",
        "OFFVIA_FIRESTORE_BACKEND_PORT | the first free port from 29000 + (`OFFVIA_FIRESTORE_PORT` mod 3000) | the Firestore emulator's own port behind the gate (`OFFVIA_FIRESTORE_GATE=1` only); every local port must be below 32768 (docs/local-stack.md)",
        'OFFVIA_BQ_REST_PORT | `9050` | BigQuery emulator REST port',
        'OFFVIA_BQ_GRPC_PORT | `9060` | BigQuery emulator gRPC port (Storage Write API)',
      ]),
      ...functionVars(),
      ...rows([
        'OFFVIA_BQ_LOCATION | `US` | location of the local datasets (`deploy/local/apply-sql.ts`)',
        'OFFVIA_BQ_PERSISTENT | `0` | `1`: the BigQuery emulator keeps its tables in a file, so they survive a stop (the reliability harness)',
        'OFFVIA_FIRESTORE_GATE | `0` | `1`: the Firestore emulator sits behind a TCP gate that can cut every client off (the reliability harness)',
        'OFFVIA_STACK_DIR | `.local/stack` | state directory of a stack (pids, logs, `env`); another one lets a second stack run beside it, with other ports',
        'OFFVIA_READY_TIMEOUT_S | `90` | seconds a service may take to become ready',
        'OFFVIA_STOP_TIMEOUT_S | `20` | seconds a service may take to exit after SIGTERM before SIGKILL',
        'OFFVIA_CACHE_DIR | an `offvia` folder in the user cache directory | where install.sh builds Node.js 22 and the Python venvs once, keyed by their pins, and links them from `.local`; `off` builds inside `.local`',
        "OFFVIA_STACK_LOCK_WAIT_S | `120` | seconds a `stack.sh` command waits for another one holding the stack's lock",
        'OFFVIA_FUNCTIONS_SOURCE | the repository | serve the functions from another built checkout (no build)',
        "OFFVIA_PYTHON | `python3` | the Python that creates the emulator's venv",
        "*OFFVIA_SCHEDULE_SCHEMA_SWEEP_SECONDS | `60` | cadence of the local scheduler loop's `schemaSweep` calls (`0` pauses it); `OFFVIA_SCHEDULE_<FUNCTION>_SECONDS` for any job in `deploy/schedules.ts`",
        "*OFFVIA_SCHEDULE_FIRE_WINDOWS_SECONDS | `60` | cadence of the local scheduler loop's `fireWindows` calls (`0` pauses it)",
        "*OFFVIA_SCHEDULE_HEARTBEAT_SECONDS | `60` | cadence of the local scheduler loop's watermark heartbeats into every pipeline's ingest topic (`0` stops them: every watermark's idle rule then waits up to `OFFVIA_WATERMARK_HOLD_MAX_MS`; see [windows](windows.md#heartbeats))",
        'OFFVIA_BRONZE_MAX_BATCH_ROWS | `500` | rows per `insertAll` of the Bronze stand-in',
        'OFFVIA_BRONZE_MAX_BATCH_DELAY_MS | `50` | how long the Bronze stand-in gathers a batch',
        'OFFVIA_BRONZE_NACK_DELAY_MS | `1000` | wait before the Bronze stand-in nacks a batch it could not write',
        'OFFVIA_TOPIC | `booking-events` | the topic `npm run demo` publishes to',
        'OFFVIA_DEMO_TIMEOUT_MS | 60000 + 50 per event | how long `npm run demo` waits for the layers',
        'OFFVIA_DEMO_BASE_DIR | set by `demo.sh` | where `npm run demo` was typed: a relative events file is resolved from there (`deploy/local/demo-args.ts`)',
        'OFFVIA_TELEMETRY_E2E_DEVICES | `300` | devices of the telemetry simulator end-to-end test (`test/e2e/telemetry-demo.test.ts`; 2000 with `OFFVIA_TELEMETRY_E2E_MINUTES=3` is the acceptance run)',
        'OFFVIA_TELEMETRY_E2E_MINUTES | `3` | minutes of readings of the telemetry simulator end-to-end test',
        "OFFVIA_TELEMETRY_E2E_PUSH_RELAY | `0` | deliveries in flight through the simulator's push relay in the telemetry end-to-end test (`0`: the stack's push subscription)",
      ]),
    ],
  },
  {
    title: 'Reliability harness',
    readBy:
      '`npm run reliability` (`deploy/local/reliability.ts`; its flags are in [reliability](reliability.md))',
    vars: rows([
      'OFFVIA_RELIABILITY_MIN_BACKOFF_MS | `1000` | first retry backoff of a failed delivery',
      'OFFVIA_RELIABILITY_MAX_BACKOFF_MS | `10000` | largest retry backoff of a failed delivery',
    ]),
  },
  {
    title: 'Benchmarks',
    readBy:
      '`npm run bench` (`bench/run.ts`), `npm run bench:state` (`bench/state-updates.ts`) and `npm run bench:keys` (`bench/key-cardinality.ts`); see [performance](performance.md)',
    vars: rows([
      'OFFVIA_BENCH_EVENTS | `10000` (bench), `2000` (bench:state), `5000` per row (bench:keys) | events in the generated stream',
      'OFFVIA_BENCH_SLOW_EVENTS | `1000` | events of the slow configurations (coalescing off, the whole stack)',
      'OFFVIA_BENCH_CONCURRENCY | `80` (bench, bench:keys), `32` (bench:state) | invocations (bench, bench:keys) or events per writer process (bench:state) in flight',
      'OFFVIA_BENCH_FUNCTION_PORT | the ingest port + 100 | port of the in-process function server',
      'OFFVIA_BENCH_FIRESTORE_PORT | `8187` | port of the Firestore emulator `bench:state` and `bench:keys` start (unless `FIRESTORE_EMULATOR_HOST` is set)',
      'OFFVIA_BENCH_PROCESSES | `4` | writer processes of `bench:state`',
      'OFFVIA_BENCH_SHARDS | `4` | shards per window in `bench:state`',
      'OFFVIA_BENCH_KEYS | `1,100,1000,5000` | key counts of the `bench:keys` rows (comma-separated; empty: no rows, the firing-rate row only)',
      'OFFVIA_BENCH_FIRING_KEYS | `50000` | (key, window)s due at once in the firing-rate row of `bench:keys` and `bench`',
      "OFFVIA_BENCH_FIRING_KEY_GROUPS | the product's `OFFVIA_WINDOW_KEY_GROUPS` | key groups per window in the firing-rate row",
      "OFFVIA_BENCH_FIRING_PARTITIONS | the product's `OFFVIA_FIRE_WINDOWS_PARTITIONS` | fireWindows partitions in the firing-rate row",
      "OFFVIA_BENCH_FIRING_CONCURRENCY | the product's `OFFVIA_FIRE_WINDOWS_CONCURRENCY` | key groups each fireWindows call fires at once in the firing-rate row",
      "OFFVIA_BENCH_FIRING_CALLS | one per partition | fireWindows calls at once in the firing-rate row, as that many invocations would. When any of these four is set, the row also runs at the product's defaults first and prints both lines",
      'OFFVIA_BENCH_FIRING_SETUP | `seed` | `ingest`: the firing-rate row ingests its events through the pipeline instead of seeding the key-group documents with a BulkWriter',
      'OFFVIA_BENCH_KEYS_EVENTS | `5000` | events per key-cardinality row of `npm run bench`',
      'OFFVIA_BENCH_SKIP_FIRING | unset | `1`: `bench:keys` prints the key-cardinality rows only',
      'OFFVIA_BENCH_SKIP_TELEMETRY | unset | `1`: `bench:keys` prints no telemetry row',
      'OFFVIA_BENCH_TELEMETRY_DEVICES | `500` | devices of the telemetry row of `bench:keys` (3 minutes of one reading a minute each)',
    ]),
  },
  {
    title: 'Operator command',
    readBy:
      '`npm run offvia` (`shared/ops/cli.ts`; its commands are in [operations](operations.md))',
    vars: rows([
      'OFFVIA_DEBUG | unset | set: a failing command prints the stack trace after its one-line message',
    ]),
  },
  {
    title: 'Tests',
    readBy:
      '`npm run test:beam` ([testing](testing.md#the-differential-test-against-apache-beam)) and the deploy tests',
    vars: rows([
      'OFFVIA_BEAM_SEED | `20261007` | seed of the generated scenarios',
      'OFFVIA_BEAM_RUNS | `300` | how many generated scenarios (0: hand-written only)',
      'OFFVIA_BEAM_SCENARIO | unset | one scenario alone (`hand/<name>` or `gen/<seed>/<n>`)',
      'OFFVIA_BEAM_JOBS | min(2, CPUs) | Beam worker processes',
      'OFFVIA_EXTRA_PIPELINE_DIRS | unset | comma-separated folders (relative to the repository root) whose pipeline folders are registered too: `test/fixtures/pipelines` registers the payments fixture ([pipelines](pipelines.md#write-your-own-pipeline)); the stack passes it to its functions',
      'OFFVIA_GCLOUD_CLI_CHECK | unset | `1`: check that the installed `gcloud` accepts every command of the deploy plan ([deploy](deploy.md#the-command))',
    ]),
  },
];

/** Names in the scripts that are not settings (paths, pins, ready files a script hands its children). */
export const INTERNAL_NAMES: readonly string[] = [
  // Retired: loadWindowConfig refuses any value but `key-groups` (docs/windows.md, draining the per-window layout).
  'OFFVIA_WINDOW_LAYOUT',
  'OFFVIA_ROOT',
  'OFFVIA_LOCAL_DIR',
  'OFFVIA_VENV_BQ',
  'OFFVIA_VENV_BEAM',
  'OFFVIA_VENV_BENCH',
  'OFFVIA_BQ_PINS',
  'OFFVIA_BEAM_PINS',
  'OFFVIA_DUCKDB_VERSION',
  'OFFVIA_FUNCTIONS',
  'OFFVIA_PLAN',
  'OFFVIA_TEXT',
  'OFFVIA_BRONZE_READY_FILE',
  'OFFVIA_GATE_READY_FILE',
  'OFFVIA_SCHEDULER_READY_FILE',
  'OFFVIA_BQEMU_ENV',
  'OFFVIA_SOAK_CHECK_ONLY',
  'OFFVIA_STACK_THROWAWAY',
  'OFFVIA_NODE_MAJOR',
  'OFFVIA_NODE_DIR',
  'OFFVIA_NODE_BIN',
];

/** The readable units of an integer variable's unit, largest first. */
const HUMAN_UNITS: Partial<Record<VarUnit, readonly (readonly [number, string])[]>> = {
  ms: [
    [86_400_000, 'days'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ],
  bytes: [
    [1024 * 1024, 'MiB'],
    [1024, 'KiB'],
  ],
};

/** `300000` ms → `5 min`, `1048576` bytes → `1 MiB`; undefined when no whole unit fits (the raw number says it all). */
function humanText(value: number, unit: VarUnit): string | undefined {
  const [size, name] = HUMAN_UNITS[unit]?.find(([size]) => value > 0 && value % size === 0) ?? [];
  if (size === undefined) return undefined;
  const n = value / size;
  return `${n} ${n === 1 && name === 'days' ? 'day' : name}`;
}

/** An integer with its unit and, where it helps, a readable form: `300000` ms (5 min). */
function intText(value: number, spec: IntVarSpec): string {
  const human = humanText(value, spec.unit);
  const unit = spec.unit === 'count' ? '' : ` ${spec.unit}`;
  return `\`${value}\`${unit}${human !== undefined && human !== `${value} ${spec.unit}` ? ` (${human})` : ''}`;
}

function defaultCell(spec: VarSpec): string {
  if (spec.defaultText !== undefined) return spec.defaultText;
  switch (spec.kind) {
    case 'int':
      return intText(spec.default, spec);
    case 'bool':
      return `\`${String(spec.default)}\``;
    case 'choice':
    case 'table':
    case 'name':
      return `\`${spec.default}\``;
    case 'tables':
    case 'text':
      return spec.defaultText;
  }
}

function allowedCell(spec: VarSpec): string {
  switch (spec.kind) {
    case 'int': {
      const range = `${intText(spec.min, spec)} to ${intText(spec.max, spec)}`;
      return spec.rangeText === undefined ? range : `${range}; ${spec.rangeText}`;
    }
    case 'bool':
      return '`true`/`false` (also `1`/`0`, `yes`/`no`)';
    case 'choice':
      return spec.choices.map((c) => `\`${c}\``).join(', ');
    case 'table':
      return '`dataset.table` or `project.dataset.table`';
    case 'tables':
      return 'comma-separated `dataset.table` or `project.dataset.table`';
    case 'name':
      return spec.patternText;
    case 'text':
      return spec.allowedText ?? 'text';
  }
}

/** A Markdown table cell: no line breaks, `|` escaped. */
function cell(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
}

/** A titled Markdown table: the first column is the variable's name in backticks, then `cells` as cells. */
function table(heading: string, intro: string, head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const body = rows.map(([name, ...cells]) => line([`\`${name}\``, ...cells.map(cell)]));
  return [
    heading,
    '',
    intro,
    '',
    line(head),
    line(head.map(() => '---')).replace(/ /g, ''),
    ...body,
    '',
  ].join('\n');
}

const specTable = (g: VarGroup): string =>
  table(
    `## ${g.title}`,
    g.intro,
    ['variable', 'default', 'allowed', 'meaning'],
    g.vars.map((v) => [v.name, defaultCell(v), allowedCell(v), v.meaning]),
  );

const toolingTable = (g: ToolingGroup): string =>
  table(
    `### ${g.title}`,
    `Read by ${g.readBy}.`,
    ['variable', 'default', 'meaning'],
    g.vars.map((v) => [v.name, v.default, v.meaning]),
  );

/** The whole of docs/configuration.md, from the specs and the tooling list. Pure: same input, same text. */
export function renderConfigReference(
  groups: readonly VarGroup[] = CONFIG_VAR_GROUPS,
  tooling: readonly ToolingGroup[] = TOOLING_VAR_GROUPS,
): string {
  const header = [
    '# Configuration',
    '',
    'Every environment variable the deployed functions read, with its default, allowed values and meaning; then',
    'the variables only the local stack, the benchmarks and the tests read.',
    '',
    '<!-- Generated by `npm run docs:config` from the specs in shared/config; do not edit by hand. -->',
    '',
    'The functions validate every variable once at cold start, and a bad value fails the instance with an error',
    'naming the variable; the deploy plan runs the same loaders, so a bad `--env` value stops the deploy first.',
    'The tables below are generated from the specs those loaders read (`shared/config/*-config.ts`, the `*_VARS`',
    'tables), so they cannot drift from the code: a unit test fails when this file differs from what',
    '`npm run docs:config` generates.',
    '',
    '**Adding a variable:** give it a spec in the `*_VARS` table of the config module that reads it (`intVar`,',
    '`boolVar`, `choiceVar`, ... from `shared/config/spec.ts`: name, default, range or choices, unit, meaning),',
    'read it in that module through the spec (`readIntVar(env, SPEC)` and friends), and run `npm run docs:config`.',
    'A new engine module adds its group to `ENGINE_VAR_GROUPS` in `shared/config/registry.ts`; a pipeline names its',
    "own group in its definition's `config`, and the registry collects it. A variable only a script reads goes in",
    'the hand-written list at the end (`TOOLING_VAR_GROUPS` in `scripts/config-reference.ts`); the local ports and',
    "URLs of the pipelines' functions are listed from the registry.",
    '',
  ].join('\n');
  const generated = groups.map(specTable).join('\n');
  const handWritten = [
    '## Local stack and tooling variables',
    '',
    '**Hand-written section** (`TOOLING_VAR_GROUPS` in `scripts/config-reference.ts`): these are read only by the',
    'local stack, the benchmarks and the test harnesses, never by a deployed function, each by its own script.',
    'The platform sets `FUNCTION_TARGET` (the function an instance serves: `functions/index.ts` builds only its',
    "dependencies) and `PORT` (the Functions Framework's).",
    '',
    tooling.map(toolingTable).join('\n'),
  ].join('\n');
  return `${header}\n${generated}\n${handWritten}`;
}

function main(argv: readonly string[]): number {
  const root = join(__dirname, '..');
  const path = join(root, CONFIG_REFERENCE_PATH);
  const text = renderConfigReference();
  if (argv.includes('--help')) {
    process.stdout.write(
      'usage: npm run docs:config [-- --check]\n' +
        `  writes ${CONFIG_REFERENCE_PATH} from the specs in shared/config; --check exits 1 if it is stale\n`,
    );
    return 0;
  }
  const unknown = argv.filter((a) => a !== '--check');
  if (unknown.length > 0) {
    process.stderr.write(
      `docs:config: unknown argument ${unknown[0]} (usage: npm run docs:config [-- --check])\n`,
    );
    return 2;
  }
  if (argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(path, 'utf8');
    } catch (err) {
      process.stderr.write(`docs:config: cannot read ${CONFIG_REFERENCE_PATH}: ${String(err)}\n`);
      return 1;
    }
    if (current !== text) {
      process.stderr.write(
        `docs:config: ${CONFIG_REFERENCE_PATH} is stale; run npm run docs:config\n`,
      );
      return 1;
    }
    process.stdout.write(`${CONFIG_REFERENCE_PATH} is up to date\n`);
    return 0;
  }
  writeFileSync(path, text);
  process.stdout.write(`wrote ${CONFIG_REFERENCE_PATH}\n`);
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
