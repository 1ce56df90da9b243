import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'test-output/**',
      'examples/**/node_modules/**',
      'test/fixtures/garden-examples/**',
      'test/fixtures/garden-e2e/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // The executable is CommonJS (bin/package.json), so that Node starts tend without its ES module
    // loader; the dependency-cruiser configuration and its list of layers are CommonJS as it reads them.
    files: ['bin/**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // src/ never imports the simulator; only the namespace-tracking client (src/plugins/kubernetes/client/)
    // imports @kubernetes/client-node: every plugin reaches the API through it (docs/design.md#events).
    files: ['src/**/*.ts'],
    ignores: ['src/plugins/kubernetes/client/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@kubernetes/client-node',
              message:
                'Use the namespace-tracking client in src/plugins/kubernetes/client/ (ctx.kubernetes()).',
            },
          ],
          patterns: [{ group: ['**/tools/kube-sim/**'], message: 'src/ never imports the simulator.' }],
        },
      ],
    },
  },
  {
    // No function over 150 lines, counted as ESLint counts by default (blank lines and comments
    // included). Migrations are a list of statements, not logic to read.
    files: ['src/**/*.ts'],
    ignores: ['src/server/db/migrations/**'],
    rules: { 'max-lines-per-function': ['error', { max: 150 }] },
  },
  {
    files: ['src/plugins/kubernetes/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/tools/kube-sim/**'], message: 'src/ never imports the simulator.' }] },
      ],
    },
  },
);
