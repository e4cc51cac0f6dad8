/**
 * Every table between markers in README.md and docs/ is its generator's output: the marker names a registered
 * generator (test/docs/generators.ts) and one of its tables, the table renders from its recorded run exactly as the
 * doc shows it, and every generator's table has its place. Pure and fast: part of test:quick.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  REPO_ROOT,
  checkDocTables,
  findMarkers,
  readRecorded,
  type DocTableGenerator,
  type DocsToCheck,
} from '../helpers/doc-tables';
import * as registered from './generators';

const generators = Object.values(registered) as DocTableGenerator<unknown>[];

function markdownFiles(dir: string): string[] {
  return readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(rel) : e.name.endsWith('.md') ? [rel] : [];
  });
}

async function repository(): Promise<DocsToCheck> {
  const files = ['README.md', ...markdownFiles('docs')];
  const docs = Object.fromEntries(files.map((f) => [f, readFileSync(path.join(REPO_ROOT, f), 'utf8')]));
  const recorded = Object.fromEntries(await Promise.all(generators.map(async (g) => [g.name, await readRecorded(g)])));
  return { docs, generators, recorded };
}

describe('generated doc tables', function () {
  this.timeout(30_000);
  let repo: DocsToCheck;
  before(async () => {
    repo = await repository();
  });

  it('every generator has a name of its own and a doc that exists', () => {
    assert.equal(new Set(generators.map((g) => g.name)).size, generators.length);
    for (const g of generators) assert.ok(g.doc in repo.docs, `${g.name}: ${g.doc} is README.md or under docs/`);
  });

  it('every marker, on a line of its own or inline, names a registered generator', () => {
    const known = new Set(generators.map((g) => g.name));
    for (const [doc, text] of Object.entries(repo.docs)) {
      const prose = text.replace(/^```[^]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
      for (const m of prose.matchAll(/<!--\s*\/?([a-z][a-z0-9-]*):[a-z0-9][a-z0-9-]*\s*-->/g)) {
        assert.ok(known.has(m[1]!), `${doc}: ${m[0]} names no registered generator`);
      }
    }
  });

  it('every marker names a generator and its table, and shows exactly what it renders from the recorded run', async () => {
    assert.deepEqual(await checkDocTables(repo), []);
  });

  it('finds a hand edit, a marker without a generator, a table without its marker, and a marker left open', async () => {
    const [g] = generators;
    assert.ok(g);
    const [table] = g.tables;
    const doc = repo.docs[g.doc]!;
    const edited = doc.replace(/(<!-- \S+ -->\n\n)(\S)/, '$1X$2');
    const orphan = `${doc}\n<!-- nobody:table -->\n\n<!-- /nobody:table -->\n`;
    const without = doc.replace(new RegExp(`<!-- ${g.name}:${table} -->[^]*?<!-- /${g.name}:${table} -->`), '');
    const check = (text: string) => checkDocTables({ ...repo, docs: { ...repo.docs, [g.doc]: text } });
    assert.match((await check(edited)).join('\n'), /is not what its generator renders/);
    assert.match((await check(orphan)).join('\n'), /nobody:table --> names no registered generator/);
    assert.match((await check(without)).join('\n'), new RegExp(`no marker for ${g.name}:${table}`));
    assert.throws(() => findMarkers('<!-- a:b -->\ntext', 'x.md'), /x\.md: <!-- a:b --> is never closed/);
    assert.throws(() => findMarkers('<!-- /a:b -->', 'x.md'), /closes nothing/);
    assert.deepEqual(
      findMarkers('```\n<!-- a:b -->\n```\nsee `<!-- a:b -->`\n', 'x.md'),
      [],
      'examples are not markers',
    );
  });
});
