import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test-output/**', 'examples/**/node_modules/**'] },
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
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/tools/kube-sim/**'], message: 'src/ never imports the simulator.' }] },
      ],
    },
  },
  {
    // The kubernetes plugin reaches the API only through its namespace-tracking client (docs/design.md#events).
    files: ['src/plugins/kubernetes/**/*.ts'],
    ignores: ['src/plugins/kubernetes/client/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@kubernetes/client-node',
              message: 'Use the namespace-tracking client in src/plugins/kubernetes/client/ instead.',
            },
          ],
          patterns: [{ group: ['**/tools/kube-sim/**'], message: 'src/ never imports the simulator.' }],
        },
      ],
    },
  },
);
