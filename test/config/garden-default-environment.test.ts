/**
 * A Garden Project without `environments`: Garden 0.12 gives it one, `local` in namespace
 * `default` with the local-kubernetes provider (core/src/config/project.ts defaultEnvironments), so
 * tend does for a Project of Garden 0.12's apiVersion (none, or garden.io/v0), with one note; Garden
 * 0.13 and later require the key, so a garden.io/v1 or v2 Project is the error, saying what to add.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const module = `kind: Module
name: web
type: container
image: nginx:1.25
services:
  - name: web
    ports: [{ name: http, containerPort: 80 }]
`;

const load = (root: string) => loadProjectConfig({ cwd: root, plugins: builtinPlugins() });

describe('a Garden Project without environments', () => {
  it.each([['# Garden 0.12\n'], ['apiVersion: garden.io/v0\n']])(
    "of Garden 0.12 (%s) gets Garden 0.12's default: local, namespace default, local-kubernetes; one note",
    async (apiVersion) => {
      const root = makeProject({
        'project.garden.yml': `${apiVersion}kind: Project\nname: noenv\n---\n${module}`,
      });
      const loaded = await load(root);
      expect(loaded.project.defaultEnvironment).toBe('local');
      expect(loaded.project.environments).toMatchObject([
        {
          name: 'local',
          defaultNamespace: 'default',
          varfiles: [{ path: 'garden.local.env', optional: true }],
        },
      ]);
      expect(loaded.project.providers.map((p) => [p.name, p.environments])).toEqual([
        ['kubernetes', ['local']],
        ['exec', undefined],
      ]);
      expect(loaded.actions.map((a) => a.ref).sort()).toEqual(['deploy.web']);
      expect(loaded.notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual([
        "project.garden.yml:2 environments: none listed; Garden 0.12's default is used: environment local (namespace default) with the local-kubernetes provider",
      ]);
    },
  );

  it.each([['garden.io/v1'], ['garden.io/v2']])(
    'of apiVersion %s (Garden 0.13 and later require it) is the error at the Project, saying what to add',
    async (apiVersion) => {
      const root = makeProject({
        'project.garden.yml': `apiVersion: ${apiVersion}\nkind: Project\nname: noenv\n---\n${module}`,
      });
      const error = (await load(root).catch((e: unknown) => e)) as TendError;
      const errors = (
        error.detail as { errors: { message: string; location: { file: string; line: number } }[] }
      ).errors;
      expect(errors.map((e) => `${e.location.file}:${e.location.line} ${e.message}`)).toEqual([
        'project.garden.yml:2 missing required key "environments" in the Project document: Garden 0.13 and later require at least one environment; add `environments: [{ name: local }]`',
      ]);
      expect(error.code).toBe('TEND_CONFIG_INVALID');
    },
  );
});
