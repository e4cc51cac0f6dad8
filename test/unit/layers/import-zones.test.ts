/**
 * The layers of docs/architecture.md are a lint rule (eslint.config.mjs `layerZones`): a wrong-way import fails
 * `npm run lint`. Each row lints one import line as if written in a real file of that layer, with only that rule on.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { ESLint, type Linter } from 'eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import tseslint from 'typescript-eslint';
import { REPO_ROOT } from '../../../testkit/temporal';

const ROWS: { file: string; imports: string; allowed: boolean }[] = [
  { file: 'src/vendor-sim/state.ts', imports: '../store/episode-store', allowed: false },
  { file: 'src/vendor-sim/state.ts', imports: '../files/durable-fs', allowed: true },
  { file: 'src/legacy-migration/plan.ts', imports: '../verify/checks', allowed: false },
  { file: 'src/verify/evidence-check.ts', imports: '../legacy-migration/legacy-mapping', allowed: true },
  { file: 'src/domain/names.ts', imports: '../activities', allowed: false },
  { file: 'src/domain/names.ts', imports: './paid-step', allowed: true },
  { file: 'src/store/file-store.ts', imports: '../activities/allocation', allowed: false },
  { file: 'src/workflows/paid-step.ts', imports: '../store/episode-store', allowed: false },
  { file: 'src/activities/allocation.ts', imports: '../vendor-sim/faults', allowed: false },
  { file: 'src/activities/allocation.ts', imports: '../legacy-migration/plan', allowed: false },
  { file: 'src/worker.ts', imports: './cli/context', allowed: false },
  { file: 'src/cli/context.ts', imports: '../worker', allowed: true },
  { file: 'campaign/check/checker.ts', imports: '../../src/store/episode-store', allowed: false },
  { file: 'campaign/check/checker.ts', imports: '../../src/domain/names', allowed: false },
  { file: 'campaign/driver.ts', imports: '../src/vendor-sim/simulator', allowed: true },
  { file: 'campaign/driver.ts', imports: '../testkit/wait', allowed: true },
  { file: 'campaign/driver.ts', imports: '../bench/results', allowed: false },
  { file: 'campaign/driver.ts', imports: '../test/faults/campaign-file.test', allowed: false },
  { file: 'bench/run.ts', imports: '../testkit/processes', allowed: true },
  { file: 'bench/run.ts', imports: '../campaign/plan', allowed: false },
  { file: 'testkit/reliability.ts', imports: '../bench/contention', allowed: false },
  { file: 'testkit/reliability.ts', imports: '../test/unit/domain/week-id.test', allowed: false },
];

describe('import layers are enforced by lint', function () {
  this.timeout(60_000);
  let eslint: ESLint;

  before(async () => {
    const config = (await import(path.join(REPO_ROOT, 'eslint.config.mjs'))) as {
      layerZones: unknown[];
      supportZones: unknown[];
    };
    assert.ok(config.layerZones.length > 50, 'the zones are built from the LAYERS table');
    const onlyTheZones: Linter.Config[] = [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        plugins: { 'import-x': importX as unknown as ESLint.Plugin },
        settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })] },
        rules: {
          'import-x/no-restricted-paths': ['error', { zones: [...config.layerZones, ...config.supportZones] }],
        },
      },
    ];
    eslint = new ESLint({ cwd: REPO_ROOT, overrideConfigFile: true, overrideConfig: onlyTheZones });
  });

  for (const row of ROWS) {
    it(`${row.file} ${row.allowed ? 'may' : 'may not'} import ${row.imports}`, async () => {
      const text = `import * as m from '${row.imports}';\nexport const used = m;\n`;
      const [result] = await eslint.lintText(text, { filePath: path.join(REPO_ROOT, row.file) });
      const zones = result!.messages.filter((m) => m.ruleId === 'import-x/no-restricted-paths');
      const fatal = result!.messages.filter((m) => m.fatal);
      assert.deepEqual(fatal, [], 'the line parses');
      assert.equal(zones.length, row.allowed ? 0 : 1, JSON.stringify(result!.messages));
    });
  }
});

describe('the review desk cannot import the vendor client or key loader (it holds no vendor key)', function () {
  this.timeout(60_000);

  it('src/review/ may not import vendor-api/client or vendor-api/credentials; vendor-api/api types it may', async () => {
    const project = new ESLint({ cwd: REPO_ROOT });
    const file = path.join(REPO_ROOT, 'src/review/prices.ts');
    const rule = ((await project.calculateConfigForFile(file)) as Linter.Config).rules?.['no-restricted-imports'];
    assert.ok(rule, 'the rule is on for src/review/');
    const only = new ESLint({
      cwd: REPO_ROOT,
      overrideConfigFile: true,
      overrideConfig: [
        { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser }, rules: { 'no-restricted-imports': rule } },
      ],
    });
    const refused = async (imports: string) => {
      const text = `import * as m from '${imports}';\nexport const used = m;\n`;
      const [result] = await only.lintText(text, { filePath: file });
      return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').length === 1;
    };
    assert.equal(await refused('../vendor-api/client'), true);
    assert.equal(await refused('../vendor-api/credentials'), true);
    assert.equal(await refused('../vendor-api/api'), false);
  });
});
