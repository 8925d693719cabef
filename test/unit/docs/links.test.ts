// Every relative link and anchor in README.md and docs/*.md resolves the way GitHub resolves it (no network: only
// links inside the repository are checked). The checker itself is tested on small in-memory documents first, so
// a checker that finds nothing cannot pass for a clean tree.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  type RepoFiles,
  type Slugger,
  checkMarkdownLinks,
  headingAnchors,
  linkTargets,
  repositoryFiles,
} from '../../support/markdown-links';

const ROOT = join(__dirname, '..', '..', '..');

/** github-slugger is ESM-only; this project's tests run as CommonJS, so it is loaded with a dynamic import. */
let newSlugger: () => Slugger;
before(async () => {
  const { default: GithubSlugger } = await import('github-slugger');
  newSlugger = () => new GithubSlugger();
});

/** An in-memory repository: path → text; folders are the paths' prefixes. */
function memoryRepo(files: Record<string, string>): RepoFiles {
  return {
    read: (path) => files[path],
    isDirectory: (path) => Object.keys(files).some((f) => f.startsWith(`${path}/`)),
  };
}

describe('markdown link check', () => {
  it("computes GitHub's heading anchors: code, punctuation, case, repeats", () => {
    assert.deepEqual(
      headingAnchors(
        [
          '# Delivery guarantees',
          '## The benchmark (`npm run bench`)',
          "## Ours vs the lab's Beam pipeline, event by event",
          '## Window-state updates (`npm run bench:state`)',
          '## Notes',
          '## Notes',
          '```md',
          '## not a heading: in a fence',
          '```',
        ].join('\n'),
        newSlugger,
      ),
      [
        'delivery-guarantees',
        'the-benchmark-npm-run-bench',
        'ours-vs-the-labs-beam-pipeline-event-by-event',
        'window-state-updates-npm-run-benchstate',
        'notes',
        'notes-1',
      ],
    );
  });

  it('finds inline, reference and image links, and none inside code', () => {
    assert.deepEqual(
      linkTargets(
        [
          'See [a](docs/a.md#x) and ![img](pic.png) and [ref][r].',
          'Not `[code](nope.md)`.',
          '```',
          '[fenced](nope2.md)',
          '```',
          '[r]: docs/b.md',
        ].join('\n'),
      ),
      ['docs/a.md#x', 'pic.png', 'docs/b.md'],
    );
  });

  it('reports a missing file, a missing anchor, a link out of the repository; accepts good ones', () => {
    const repo = memoryRepo({
      'README.md': [
        '# Top',
        '[ok](docs/a.md#second-part) [ok dir](docs/) [self](#top) [web](https://example.com/x)',
        '[missing file](docs/nope.md) [missing anchor](docs/a.md#third) [out](../elsewhere.md)',
        '[bad self](#nowhere)',
      ].join('\n'),
      'docs/a.md': '# A\n\n## Second part\n',
    });
    assert.deepEqual(
      checkMarkdownLinks(['README.md'], repo, newSlugger).map((p) => p.link),
      ['docs/nope.md', 'docs/a.md#third', '../elsewhere.md', '#nowhere'],
    );
  });

  it('README.md and docs/*.md: every relative link and anchor resolves', () => {
    const files = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    assert.ok(files.length >= 11, `only ${files.length} files found`);
    const problems = checkMarkdownLinks(files, repositoryFiles(ROOT), newSlugger);
    assert.deepEqual(
      problems.map((p) => `${p.file}: ${p.link}: ${p.reason}`),
      [],
    );
  });
});
