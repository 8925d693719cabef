// Finds broken relative links and anchors in Markdown files, as GitHub would resolve them: markdown-it parses the
// links (so code spans and fences are skipped, reference-style links resolved) and github-slugger computes each
// heading's anchor with GitHub's rules (lowercase, punctuation dropped, spaces to hyphens, -1/-2 for repeats).
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, sep } from 'node:path';
import MarkdownIt from 'markdown-it';

/** One unresolvable link: the file it is in, the link as written, and why it does not resolve. */
export interface LinkProblem {
  readonly file: string;
  readonly link: string;
  readonly reason: string;
}

/** The repository's files by repository-relative path; tests pass an in-memory one. */
export interface RepoFiles {
  /** The file's text, or `undefined` when there is no such file. */
  read(path: string): string | undefined;
  /** Whether `path` is a folder. */
  isDirectory(path: string): boolean;
}

/** A slugger as github-slugger's `GithubSlugger` instances are: `slug` remembers what it returned before. */
export interface Slugger {
  slug(text: string): string;
}

type Token = MarkdownIt.Token;

const md = new MarkdownIt({ html: true });
/** `https:`, `mailto:`, … : not ours to check (no network in unit tests). */
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** The plain text of an inline token, as GitHub renders a heading before slugging it (markup and HTML dropped). */
function plainText(inline: Token | undefined): string {
  return (inline?.children ?? [])
    .filter((t) => t.type === 'text' || t.type === 'code_inline')
    .map((t) => t.content)
    .join('');
}

/** The anchors GitHub gives the headings of `markdown`, in order; `newSlugger` gives a fresh per-file slugger. */
export function headingAnchors(markdown: string, newSlugger: () => Slugger): string[] {
  const tokens = md.parse(markdown, {});
  const slugger = newSlugger();
  const anchors: string[] = [];
  tokens.forEach((token, i) => {
    if (token.type === 'heading_open') anchors.push(slugger.slug(plainText(tokens[i + 1])));
  });
  return anchors;
}

/** Every link and image target in `markdown` (fenced code and code spans excluded, references resolved). */
export function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  for (const token of md.parse(markdown, {})) {
    for (const child of token.children ?? []) {
      const target =
        child.type === 'link_open'
          ? child.attrGet('href')
          : child.type === 'image'
            ? child.attrGet('src')
            : null;
      if (target !== null) targets.push(String(target));
    }
  }
  return targets;
}

/**
 * Checks every relative link and anchor in `files` (repository-relative paths): the target file or folder must
 * exist inside the repository, and an anchor into a Markdown file must be one of its heading anchors.
 * @returns the problems, empty when everything resolves.
 */
export function checkMarkdownLinks(
  files: readonly string[],
  repo: RepoFiles,
  newSlugger: () => Slugger,
): LinkProblem[] {
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (path: string): Set<string> | undefined => {
    if (!anchorCache.has(path)) {
      const text = repo.read(path);
      if (text === undefined) return undefined;
      anchorCache.set(path, new Set(headingAnchors(text, newSlugger)));
    }
    return anchorCache.get(path);
  };
  const problems: LinkProblem[] = [];
  for (const file of files) {
    const text = repo.read(file);
    if (text === undefined) {
      problems.push({ file, link: '', reason: 'file not found' });
      continue;
    }
    for (const link of linkTargets(text)) {
      if (SCHEME.test(link) || link.startsWith('//')) continue;
      const hash = link.indexOf('#');
      const pathPart = hash === -1 ? link : link.slice(0, hash);
      const fragment = hash === -1 ? undefined : decodeURIComponent(link.slice(hash + 1));
      let target = file;
      if (pathPart !== '') {
        if (pathPart.startsWith('/')) {
          problems.push({
            file,
            link,
            reason: 'absolute path: GitHub resolves it against the host, not the repository',
          });
          continue;
        }
        target = normalize(join(dirname(file), decodeURIComponent(pathPart)))
          .split(sep)
          .join('/');
        if (target === '..' || target.startsWith('../')) {
          problems.push({ file, link, reason: 'points outside the repository' });
          continue;
        }
        target = target.replace(/\/$/, '');
        if (repo.read(target) === undefined && !repo.isDirectory(target)) {
          problems.push({ file, link, reason: `no such file or folder: ${target}` });
          continue;
        }
      }
      if (fragment === undefined || fragment === '' || !target.endsWith('.md')) continue;
      const anchors = anchorsOf(target);
      if (anchors !== undefined && !anchors.has(fragment)) {
        problems.push({ file, link, reason: `no heading with anchor #${fragment} in ${target}` });
      }
    }
  }
  return problems;
}

/** The files of the repository checked out at `root`. */
export function repositoryFiles(root: string): RepoFiles {
  // statSync with throwIfNoEntry: false answers undefined for a missing path instead of throwing.
  const stat = (path: string) => statSync(join(root, path), { throwIfNoEntry: false });
  return {
    read: (path) => (stat(path)?.isFile() ? readFileSync(join(root, path), 'utf8') : undefined),
    isDirectory: (path) => stat(path)?.isDirectory() ?? false,
  };
}
