import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

// Code that runs inside Temporal's workflow sandbox (and the pure domain it imports): no Node built-ins, no process
// globals, no timers the sandbox does not replace. The SDK's webpack bundle would fail at start; this fails at lint.
const SANDBOXED = ['src/workflows/**/*.ts', 'src/domain/**/*.ts', 'src/shared.ts'];
const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));
const sandboxGlobal = (name, why) => ({ name, message: `${name} is not available in workflow code: ${why}` });

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
    // The review desk is a top layer, like the CLI: only cli/, cli.ts and demo.ts may import it.
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: ['./src/!(cli|review)/**', './src/!(cli|demo).ts'],
              from: './src/review',
              message: 'the review desk is a top layer: only the CLI and the demo import it',
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
    // The domain is pure: it does not even wait.
    files: ['src/domain/**/*.ts', 'src/shared.ts'],
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
    files: ['test/**/*.ts', 'bench/**/*.ts'],
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
