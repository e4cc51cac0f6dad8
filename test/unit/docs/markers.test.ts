/**
 * The generated tables of README.md and docs/ (testkit/doc-tables.ts): every marker is closed where it opened, and
 * every table between markers names the commit it ran on, so that a reader knows which code it describes.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT, findMarkers } from '../../../testkit/doc-tables';

function markdownFiles(dir: string): string[] {
  return readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(rel) : e.name.endsWith('.md') ? [rel] : [];
  });
}

/** A commit as the captions write it: ` at 1a2b3c4` (runCaption) or `commit 1a2b3c4`. */
const COMMIT = /\b(?:at|commit) [0-9a-f]{7,40}\b/;

describe('generated doc tables', () => {
  const docs = ['README.md', ...markdownFiles('docs')].map((f) => ({
    doc: f,
    text: readFileSync(path.join(REPO_ROOT, f), 'utf8'),
  }));

  it('every marker is closed, once, and not nested', () => {
    for (const { doc, text } of docs) assert.doesNotThrow(() => findMarkers(text, doc), doc);
    assert.throws(() => findMarkers('<!-- a:b -->\ntext', 'x.md'), /x\.md: <!-- a:b --> is never closed/);
    assert.throws(() => findMarkers('<!-- /a:b -->', 'x.md'), /closes nothing/);
    assert.deepEqual(
      findMarkers('```\n<!-- a:b -->\n```\nsee `<!-- a:b -->`\n', 'x.md'),
      [],
      'examples are not markers',
    );
  });

  it('every table names the commit it ran on', () => {
    const tables = docs.flatMap(({ doc, text }) => findMarkers(text, doc).map((m) => ({ doc, ...m })));
    assert.ok(tables.length > 10, `the docs hold the generated tables (${tables.length})`);
    const without = tables.filter((t) => !COMMIT.test(t.content)).map((t) => `${t.doc} ${t.generator}:${t.table}`);
    assert.deepEqual(without, []);
  });
});
