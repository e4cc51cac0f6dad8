/**
 * CONTRIBUTING.md "Functions" (about 80 lines at most) is a lint rule for src/ (eslint.config.mjs): a longer function fails
 * `npm run lint` unless an eslint-disable comment says why. Tests and benchmarks are not held to it.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { ESLint, type Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { REPO_ROOT } from '../../../testkit/temporal';

const RULE = 'max-lines-per-function';

/** A function whose body has `statements` lines, with blank and comment lines between them that do not count. */
function functionOf(statements: number): string {
  const body = Array.from({ length: statements }, (_, i) => `  // step ${i}\n\n  total += ${i};`).join('\n');
  return `export function long(): number {\n  let total = 0;\n${body}\n  return total;\n}\n`;
}

describe('function length is enforced by lint in src/', function () {
  this.timeout(60_000);
  const project = new ESLint({ cwd: REPO_ROOT });

  it('src/ has the rule as an error at 80 lines, blank and comment lines skipped, IIFEs counted', async () => {
    const config = (await project.calculateConfigForFile(
      path.join(REPO_ROOT, 'src/domain/allocation.ts'),
    )) as Linter.Config;
    assert.deepEqual(config.rules?.[RULE], [2, { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }]);
  });

  for (const file of ['test/unit/domain/allocation.test.ts', 'bench/run.ts']) {
    it(`${file.split('/')[0]}/ is not held to it`, async () => {
      const config = (await project.calculateConfigForFile(path.join(REPO_ROOT, file))) as Linter.Config;
      assert.equal(config.rules?.[RULE], undefined);
    });
  }

  it('the rule as configured passes 80 counted lines and fails 81', async () => {
    const config = (await project.calculateConfigForFile(
      path.join(REPO_ROOT, 'src/domain/allocation.ts'),
    )) as Linter.Config;
    const only = new ESLint({
      cwd: REPO_ROOT,
      overrideConfigFile: true,
      overrideConfig: [
        { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser }, rules: { [RULE]: config.rules![RULE]! } },
      ],
    });
    const lint = async (statements: number) => {
      const [result] = await only.lintText(functionOf(statements), { filePath: path.join(REPO_ROOT, 'src/x.ts') });
      assert.deepEqual(
        result!.messages.filter((m) => m.fatal),
        [],
        'the text parses',
      );
      return result!.messages.filter((m) => m.ruleId === RULE).length;
    };
    // Header, `let`, `return` and the closing brace are 4 lines: 76 statements make 80, 77 make 81.
    assert.equal(await lint(76), 0);
    assert.equal(await lint(77), 1);
  });
});
