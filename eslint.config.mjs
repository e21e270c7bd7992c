// ESLint (flat config): @eslint/js's and typescript-eslint's recommended
// rules, not type-aware (fast; `npm run typecheck` does the type checking).
// `npm run lint`.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      'dist/',
      '**/target/',
      'target-cross/',
      'node_modules/',
      'bench/.work/',
      'native/vendor/',
      '.nodes/',
      '.cache/',
      '.venv/',
      'test-results/',
      'test/helpers/clients/quicgo/',
      'bench/loadclient/',
      // Generated: by napi build (--dts) and by the boundary generator.
      'src/native/addon.d.ts',
      'src/native/boundary.generated.ts',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    // Everything here runs on Node (the page.evaluate bodies in tests are
    // TypeScript, where no-undef is off and tsc checks names).
    languageOptions: { globals: globals.node },
    rules: {
      // `for await (const _ of stream)` drains; `_` names what is unused on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_' }],
      // Errors are rethrown as one line with the cause's message folded in, on purpose (the CLI and tests read them).
      'preserve-caught-error': 'off',
    },
  },
  {
    // CommonJS files (a mocha reporter, a bench preload) load modules with require().
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The addon loader requires a .node file by a path computed at run time.
    files: ['src/native/binding.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Typed events: an interface of on()/once() overloads merged with the EventEmitter class,
    // whose catch-all overload is @types/node's own `(...args: any[]) => void`.
    files: ['src/lib/server.ts', 'src/lib/compat/server.ts'],
    rules: { '@typescript-eslint/no-unsafe-declaration-merging': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // An override must keep @types/node's listener type; the factory's listener is any so that
    // node:http2's createSecureServer and compat's both fit it.
    files: ['src/lib/compat/dormant-readable.ts', 'src/lib/serve.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // JSON from the client processes (quic-go, aioquic, Chromium) and the frameworks' glue (Express,
    // Fastify, Hono typings that disagree with each other) are typed loosely on purpose.
    files: [
      'test/frameworks/**/*.ts',
      'test/helpers/clients/*.ts',
      'test/integration/profile-b.test.ts',
      'test/integration/qlog.test.ts',
    ],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Patches StreamServer.prototype and keeps the instance its patched method runs on.
    files: ['bench/tools/replay-batches.mjs'],
    rules: { '@typescript-eslint/no-this-alias': 'off' },
  },
);
