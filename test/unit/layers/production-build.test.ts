/**
 * The build compiles test/, bench/ and campaign/ beside src/ (npm test runs the compiled tests), and docs/deploy.md
 * says a deployed copy may drop them: that holds while no file of src/ imports anything outside src/ but packages.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { sourceFiles } from '../../../testkit/source-files';
import { REPO_ROOT } from '../../../testkit/temporal';

const SRC = path.join(REPO_ROOT, 'src');

/** Every module specifier of a file: static imports and exports, `import()` and `require()`. */
function specifiers(text: string): string[] {
  const found = text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^import\s+)['"]([^'"]+)['"]/gm);
  return [...found].map((m) => m[1]!);
}

describe('the production code stands without test/, bench/ and campaign/', () => {
  it('no file of src/ imports a file outside src/', () => {
    const outside = sourceFiles(SRC).flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter((s) => s.startsWith('.'))
        .map((s) => ({ file, target: path.resolve(path.dirname(file), s) }))
        .filter(({ target }) => path.relative(SRC, target).startsWith('..'))
        .map(({ file, target }) => `${path.relative(REPO_ROOT, file)} imports ${path.relative(REPO_ROOT, target)}`),
    );
    assert.deepEqual(outside, []);
  });
});
