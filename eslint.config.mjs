import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

// Code that runs inside Temporal's workflow sandbox (and the pure domain it imports): no Node built-ins, no process
// globals, no timers the sandbox does not replace. The SDK's webpack bundle would fail at start; this fails at lint.
const SANDBOXED = ['src/workflows/**/*.ts', 'src/domain/**/*.ts'];
const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));
const sandboxGlobal = (name, why) => ({ name, message: `${name} is not available in workflow code: ${why}` });

// The layers of src/, bottom first (docs/architecture.md, "Layers"). A file may import its own unit and the units of
// lower floors, nothing on its floor or above: a wrong-way import fails lint, not a review. `only` narrows a unit
// further (workflows run in the sandbox; the simulator stands in for the outside vendor and knows no store);
// `usedOnlyBy` keeps the simulator out of the code that runs in production.
const LAYERS = [
  [{ name: 'domain', paths: ['src/domain'] }],
  // The settings table and its reader: every unit above reads its environment through them.
  [{ name: 'settings', paths: ['src/settings'] }],
  [
    { name: 'failpoints', paths: ['src/failpoints'] },
    { name: 'vendor-api', paths: ['src/vendor-api'] },
  ],
  [{ name: 'files', paths: ['src/files'] }],
  [
    { name: 'store', paths: ['src/store'] },
    // The vendor port and its adapters: the paid steps see vendors only through it.
    { name: 'vendors', paths: ['src/vendors'], only: ['domain', 'settings', 'vendor-api'] },
    {
      name: 'vendor-sim',
      paths: ['src/vendor-sim'],
      only: ['domain', 'vendor-api', 'files'],
      usedOnlyBy: ['cli and review desk', 'demo'],
    },
  ],
  [
    { name: 'activities', paths: ['src/activities'] },
    { name: 'legacy-migration', paths: ['src/legacy-migration'] },
  ],
  [
    { name: 'verify', paths: ['src/verify'] },
    // Activities only as types (checked below): their code never enters the workflow bundle.
    { name: 'workflows', paths: ['src/workflows'], only: ['domain', 'activities'] },
  ],
  // src/process/: the wiring of the processes (configuration, connection, telemetry, the worker's options).
  [
    { name: 'config', paths: ['src/process/config.ts'] },
    // The workflow bundle and the hash of its code, which the deployment's build id derives from.
    { name: 'workflow-bundle', paths: ['src/process/workflow-bundle.ts'] },
  ],
  [
    // Process config the worker and the review desk both read (webhook and public URL of the desk).
    { name: 'review-notice-config', paths: ['src/process/review-notice-config.ts'] },
    { name: 'telemetry', paths: ['src/process/telemetry.ts'] },
    // Gauges of the store's unfinished episodes, set by the worker (alerts in deploy/prometheus/alerts.yml).
    { name: 'state-metrics', paths: ['src/process/state-metrics.ts'] },
    // The vendor's prices, published by the worker to the store for the review desk.
    { name: 'price-publisher', paths: ['src/process/price-publisher.ts'] },
    // Vendor callbacks (webhooks), verified by the step's adapter and applied to its record.
    { name: 'callback-receiver', paths: ['src/process/callback-receiver.ts'] },
    { name: 'temporal-connection', paths: ['src/process/temporal-connection.ts'] },
    { name: 'temporal-namespace', paths: ['src/process/temporal-namespace.ts'] },
    { name: 'worker-cache', paths: ['src/process/worker-cache.ts'] },
    { name: 'worker-deployment', paths: ['src/process/worker-deployment.ts'] },
  ],
  // Gauges of what Temporal knows: current build's pollers, draining builds, the schedule.
  [{ name: 'cluster-metrics', paths: ['src/process/cluster-metrics.ts'] }],
  [{ name: 'worker', paths: ['src/process/worker.ts', 'src/worker.ts'] }],
  // The two front doors: the `episodes` CLI and the review desk (web). Each may use the other's modules.
  [{ name: 'cli and review desk', paths: ['src/cli.ts', 'src/cli', 'src/review'] }],
  [{ name: 'demo', paths: ['src/demo.ts', 'src/demo-vendor.ts'] }],
  // `npm run campaign` (campaign/, like bench/ outside the layers) drives the whole stack; its checker is independent
  // of the code it checks, so it imports nothing of src/ at all.
  [{ name: 'campaign checker', paths: ['campaign/check'], only: [] }],
];
/** Why `unit` (on floor `level`) may not import `other`, or undefined when it may. */
function forbidden(unit, level, other, otherLevel) {
  if (otherLevel >= level) return `${unit.name} must not import ${other.name} (same floor or above)`;
  if (unit.only && !unit.only.includes(other.name)) return `${unit.name} imports only ${unit.only.join(', ')}`;
  if (other.usedOnlyBy && !other.usedOnlyBy.includes(unit.name)) {
    return `${other.name} is used only by ${other.usedOnlyBy.join(', ')} (and tests)`;
  }
  return undefined;
}
export const layerZones = LAYERS.flatMap((floor, level) =>
  floor.flatMap((unit) =>
    LAYERS.flatMap((other, otherLevel) =>
      other
        .filter((o) => o !== unit)
        .map((o) => ({ o, why: forbidden(unit, level, o, otherLevel) }))
        .filter(({ why }) => why !== undefined)
        .map(({ o, why }) => ({ target: unit.paths, from: o.paths, message: `${why}: see docs/architecture.md.` })),
    ),
  ),
);

// The support code around src/: the tests, the benchmarks and the campaign share testkit/ and never import one
// another (a test may import the module it tests). testkit/ imports none of them.
const SUPPORT = { testkit: ['testkit'], bench: ['bench'], campaign: ['campaign'], test: ['test'] };
const supportRule = (target, from) => ({
  target: SUPPORT[target],
  from: from.flatMap((f) => SUPPORT[f]),
  message: `${target}/ imports src/ and testkit/ only, never ${from.join('/ or ')}/: shared helpers live in testkit/ (docs/testing.md).`,
});
export const supportZones = [
  supportRule('testkit', ['test', 'bench', 'campaign']),
  supportRule('bench', ['test', 'campaign']),
  supportRule('campaign', ['test', 'bench']),
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.temporal/**', 'data/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-deprecated': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })] },
    rules: { 'import-x/no-cycle': 'error' },
  },
  {
    files: ['campaign/check/**/*.ts'],
    rules: { 'import-x/no-restricted-paths': ['error', { zones: [...layerZones, ...supportZones] }] },
  },
  {
    files: ['testkit/**/*.ts', 'bench/**/*.ts', 'campaign/**/*.ts'],
    ignores: ['campaign/check/**/*.ts'],
    rules: { 'import-x/no-restricted-paths': ['error', { zones: supportZones }] },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: layerZones }],
      // CONTRIBUTING.md "Functions": one job each, about 80 lines. A longer one says why in its eslint-disable comment.
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
      // More than 4 parameters become an options object or a step context.
      'max-params': ['error', 4],
    },
  },
  {
    // Workflow code takes activities as types only (`proxyActivities<...>`): their code needs Node.
    files: ['src/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../activities', '../activities/*'],
              allowTypeImports: true,
              message: 'Workflows import activities with `import type` only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: SANDBOXED,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins cannot run in the workflow sandbox.' })),
          patterns: [{ group: ['node:*'], message: 'Node built-ins cannot run in the workflow sandbox.' }],
        },
      ],
      'no-restricted-globals': [
        'error',
        sandboxGlobal('process', 'pass configuration in as workflow input'),
        sandboxGlobal('Buffer', 'use Uint8Array / TextEncoder'),
        sandboxGlobal('require', 'import at the top of the module'),
        sandboxGlobal('__dirname', 'there is no file system'),
        sandboxGlobal('__filename', 'there is no file system'),
        sandboxGlobal('global', 'use globalThis only for what the sandbox defines'),
        sandboxGlobal('setInterval', 'use sleep() in a loop'),
        sandboxGlobal('clearInterval', 'use sleep() in a loop'),
        sandboxGlobal('setImmediate', 'use sleep() or condition()'),
        sandboxGlobal('clearImmediate', 'use sleep() or condition()'),
      ],
    },
  },
  {
    // The paid steps, the CLI and the processes reach a vendor through the port (src/vendors/port.ts), never a
    // concrete client or its wire contract: an adapter is the one place that knows a vendor's API.
    files: ['src/activities/**/*.ts', 'src/cli/**/*.ts', 'src/process/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/vendor-api/client',
                '**/vendor-api/api',
                '**/vendors/native',
                '**/vendors/fal',
                '**/vendors/replicate',
              ],
              message: 'Reach vendors through the port (src/vendors/port.ts, directory.ts).',
            },
          ],
        },
      ],
    },
  },
  {
    // The review desk holds no vendor key (issue #35): it shows the prices workers publish to the store.
    files: ['src/review/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/vendor-api/client', '**/vendor-api/credentials'],
              message: 'The desk never holds the vendor key: read prices from the store (src/review/prices.ts).',
            },
          ],
        },
      ],
    },
  },
  {
    // The domain is pure: it does not even wait.
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.name='setTimeout']", message: 'the domain is pure: no timers' },
        {
          selector: "MemberExpression[object.name='Date'][property.name='now']",
          message: 'the domain is pure: take the time as input',
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'campaign/**/*.ts'],
    rules: {
      // Tests read parsed JSON from child processes and Temporal failures; narrowing every field is noise there.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  {
    files: ['**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['scripts/**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', __dirname: 'readonly', process: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
