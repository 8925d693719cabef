// docs/configuration.md is generated from the variable specs the loaders read: the committed file must be what the
// generator prints, every spec must be what its loader enforces, and every variable named in the code must be
// documented (a spec, the hand-written tooling list, or a name known not to be a setting).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadCoalescingConfig } from '../../../shared/config/coalescing-config';
import { loadIngestConfig } from '../../../shared/config/ingest-config';
import { CONFIG_VAR_GROUPS, configVarGroups } from '../../../shared/config/registry';
import { loadSchemaDriftConfig } from '../../../shared/config/schema-drift-config';
import type { Env } from '../../../shared/config/env';
import type { IntVarSpec, VarSpec } from '../../../shared/config/spec';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { ConfigError } from '../../../shared/errors';
import { PIPELINES, discoverPipelines, pipelineDirs } from '../../../shared/pipelines';
import {
  CONFIG_REFERENCE_PATH,
  INTERNAL_NAMES,
  TOOLING_VAR_GROUPS,
  renderConfigReference,
} from '../../../scripts/config-reference';

const ROOT = join(__dirname, '..', '..', '..');
const SPECS: readonly VarSpec[] = CONFIG_VAR_GROUPS.flatMap((g) => g.vars);

/** Every loader a deployed function runs at cold start, in one call. */
function loadAll(env: Env): void {
  const ingest = loadIngestConfig(env);
  loadSchemaDriftConfig(env, ingest.silverTable, ingest.projectId);
  loadWindowConfig(env);
  loadCoalescingConfig(env);
  for (const p of PIPELINES) p.config?.load(env);
}

/** The ConfigError `fn` throws (fails the test when it throws none or something else). */
function configErrorOf(fn: () => void): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  assert.fail('expected a ConfigError');
}

/** Source files under `dir` (recursively), skipping dependencies, build output and local state. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (
      ['node_modules', 'build', '.local', 'generated', 'out', 'results', 'fixtures'].includes(name)
    )
      continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|sh|py)$/.test(name) || name === 'run') out.push(path);
  }
  return out;
}

describe('docs/configuration.md', () => {
  it('is exactly what `npm run docs:config` generates from the specs', () => {
    const committed = readFileSync(join(ROOT, CONFIG_REFERENCE_PATH), 'utf8');
    assert.equal(
      committed,
      renderConfigReference(),
      `${CONFIG_REFERENCE_PATH} is stale: run npm run docs:config and commit the result`,
    );
  });

  it('lists every spec once, under its own name', () => {
    const names = SPECS.map((s) => s.name);
    assert.deepEqual(
      names.filter((n, i) => names.indexOf(n) !== i),
      [],
      'a variable in two groups',
    );
    const text = renderConfigReference();
    for (const name of names) assert.ok(text.includes(`| \`${name}\` |`), `${name} has no row`);
  });

  it('documents the defaults the loaders apply: an empty environment and the specs agree', () => {
    // The value each loader returns for an empty environment is read back through the spec's own name.
    const env: Record<string, string> = {};
    for (const spec of SPECS) {
      if (spec.kind !== 'int' || spec.defaultText !== undefined) continue;
      env[spec.name] = String(spec.default);
    }
    // Setting every int to its documented default changes nothing.
    assert.deepEqual(
      JSON.stringify([loadIngestConfig(env), loadWindowConfig(env), loadCoalescingConfig(env)]),
      JSON.stringify([loadIngestConfig({}), loadWindowConfig({}), loadCoalescingConfig({})]),
    );
    const silver = loadIngestConfig({}).silverTable;
    assert.deepEqual(loadSchemaDriftConfig(env, silver), loadSchemaDriftConfig({}, silver));
    for (const p of PIPELINES) assert.deepEqual(p.config?.load(env), p.config?.load({}), p.name);
  });

  it("enforces each integer spec's documented range: one past either end is refused, naming the variable", () => {
    const ints = SPECS.filter((s): s is IntVarSpec => s.kind === 'int');
    assert.ok(ints.length > 40, `only ${ints.length} integer specs found`);
    for (const spec of ints) {
      const above = configErrorOf(() => loadAll({ [spec.name]: String(spec.max + 1) }));
      assert.equal(above.variable, spec.name, `${spec.name}=${spec.max + 1}: ${above.message}`);
      const below = configErrorOf(() => loadAll({ [spec.name]: String(spec.min - 1) }));
      assert.equal(below.variable, spec.name, `${spec.name}=${spec.min - 1}: ${below.message}`);
    }
  });

  it('accepts both ends of every integer range that depends on no other variable', () => {
    for (const spec of SPECS) {
      if (spec.kind !== 'int' || spec.rangeText !== undefined) continue;
      for (const value of [spec.min, spec.max]) {
        try {
          loadAll({ [spec.name]: String(value) });
        } catch (err) {
          // A cross-variable rule (the ledger TTL against the window's lifetime) may refuse an extreme value of
          // another variable; it must then name the other variable, never this one.
          if (!(err instanceof ConfigError)) throw err;
          assert.notEqual(err.variable, spec.name, `${spec.name}=${value} refused: ${err.message}`);
        }
      }
    }
  });

  it('refuses a value outside the choices of every choice spec, naming the variable', () => {
    for (const spec of SPECS) {
      if (spec.kind !== 'choice') continue;
      for (const choice of spec.choices)
        assert.doesNotThrow(() => loadAll({ [spec.name]: choice }));
      const err = configErrorOf(() => loadAll({ [spec.name]: 'no-such-choice' }));
      assert.equal(err.variable, spec.name);
    }
  });

  it('documents every OFFVIA_* variable named in the code (spec, tooling list, or a known non-setting)', () => {
    // The payments fixture's own variables are documented when it is registered (its folder holds their specs).
    const withFixture = discoverPipelines(
      pipelineDirs({ OFFVIA_EXTRA_PIPELINE_DIRS: 'test/fixtures/pipelines' }),
    );
    const documented = new Set([
      ...configVarGroups(withFixture).flatMap((g) => g.vars.map((s) => s.name)),
      ...TOOLING_VAR_GROUPS.flatMap((g) => g.vars.map((v) => v.name)),
      ...INTERNAL_NAMES,
    ]);
    const missing = new Map<string, string>();
    const files = ['shared', 'functions', 'deploy', 'bench', 'test', '.ci'].flatMap((d) =>
      sourceFiles(join(ROOT, d)),
    );
    assert.ok(files.length > 100, `only ${files.length} source files scanned`);
    // A name followed by `_` plus an interpolation (`OFFVIA_SCHEDULE_${name}`) is a prefix, not a variable; one
    // followed by `.table` is a dataset id in a test of table references.
    const NAME = /\bOFFVIA_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_$]|\.[a-z])/g;
    for (const file of files) {
      if (file === __filename) continue;
      for (const match of readFileSync(file, 'utf8').matchAll(NAME)) {
        if (!documented.has(match[0])) missing.set(match[0], relative(ROOT, file));
      }
    }
    assert.deepEqual(
      [...missing].map(([name, file]) => `${name} (${file})`),
      [],
      'undocumented: add a spec in shared/config, or a TOOLING_VAR_GROUPS entry in scripts/config-reference.ts',
    );
  });

  it('has no tooling entry for a name the code no longer mentions', () => {
    const code = ['shared', 'functions', 'deploy', 'bench', 'test', '.ci']
      .flatMap((d) => sourceFiles(join(ROOT, d)))
      .filter((f) => f !== __filename)
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const stale = TOOLING_VAR_GROUPS.flatMap((g) => g.vars)
      .filter((v) => v.builtName !== true && !code.includes(v.name))
      .map((v) => v.name);
    assert.deepEqual(stale, []);
  });
});
