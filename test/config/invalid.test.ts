/**
 * Invalid configurations, one row per case: the files, and the exact `file:line:column: message`
 * and code of the (first) error.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TendError } from '../../src/errors.js';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { testPlugins } from './fixtures/plugins.js';
import { removeProjects, writeProject, yaml } from './fixtures/project.js';

afterAll(removeProjects);

/** A valid Project document (4 lines), used when a case does not give its own tend.yml. */
const project = yaml`
  kind: Project
  name: shop
  environments: [{ name: dev }, { name: preview }]
  providers: [{ name: local }]
`;

const build = 'kind: Build\ntype: cmd\nname: api\nspec: { command: [make] }\n';

interface Case {
  name: string;
  files: Record<string, string>;
  error: string;
  code: string;
}

const cases: Case[] = [
  {
    name: 'unknown key in an environment',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            defaultNamespce: shop-dev
      `,
    },
    error:
      'tend.yml:5:5: unknown key "defaultNamespce" in environments[0]; did you mean "defaultNamespace"? expected one of: name, defaultNamespace, cleanup, pullRequest, variables, varfiles',
    code: 'TEND_CONFIG_UNKNOWN_KEY',
  },
  {
    name: 'unknown key at the top of an action',
    files: {
      'tend.yml': project,
      'api.tend.yml': yaml`
        kind: Build
        type: cmd
        name: api
        dependecies: [build.web]
        spec: { command: [make] }
      `,
    },
    error:
      'api.tend.yml:4:1: unknown key "dependecies" in action build.api; did you mean "dependencies"? expected one of: kind, type, name, ' +
      'description, dependencies, source, include, exclude, timeout, cacheResult, variables, varfiles, disabled, environments, copyFrom, buildAtSource, build, spec',
    code: 'TEND_CONFIG_UNKNOWN_KEY',
  },
  {
    name: 'YAML syntax error',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Build\ntype: cmd\nname: api\nspec: { command: [make }\n',
    },
    error:
      'api.tend.yml:4:24: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]',
    code: 'TEND_CONFIG_YAML',
  },
  {
    name: 'duplicate key in a mapping',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Build\ntype: cmd\nname: api\nname: web\nspec: {}\n',
    },
    error: 'api.tend.yml:4:1: duplicate key "name"; keys must be unique in a mapping',
    code: 'TEND_CONFIG_YAML',
  },
  {
    name: 'unquoted template expression in a flow mapping',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Deploy\ntype: cmd\nname: api\nspec: { command: [run], env: { A: ${var.a} } }\n',
    },
    error:
      'api.tend.yml:4:35: YAML syntax error: a template expression inside a flow mapping or list ({ } or [ ]) ' +
      'must be quoted, e.g. { image: "${actions.build.api.outputs.image}" }',
    code: 'TEND_CONFIG_YAML',
  },
  {
    name: 'alias that no anchor before it names (a README placeholder such as *HOSTNAME*)',
    files: {
      'tend.yml': project,
      'api.tend.yml': build + '---\nkind: Deploy\ntype: cmd\nname: api\nspec:\n  command: [echo, *MSG]\n',
    },
    error:
      'api.tend.yml:10:19: YAML error: the alias *MSG names no anchor &MSG set before it; ' +
      'a plain value starting with * is a YAML alias: quote the value if it is text',
    code: 'TEND_CONFIG_YAML',
  },
  {
    name: 'alias of a hostile 10,000-character name: named cut, never echoed whole',
    files: { 'tend.yml': project, 'api.tend.yml': `kind: Build\ntype: cmd\nname: *${'a'.repeat(10_000)}\n` },
    error:
      `api.tend.yml:3:7: YAML error: the alias *${'a'.repeat(64)}… names no anchor &${'a'.repeat(64)}… set before it; ` +
      'a plain value starting with * is a YAML alias: quote the value if it is text',
    code: 'TEND_CONFIG_YAML',
  },
  {
    name: 'alias used before its anchor',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Build\ntype: cmd\nname: *n\nspec: { command: [make], env: { A: &n api } }\n',
    },
    error:
      'api.tend.yml:3:7: YAML error: the alias *n names no anchor &n set before it; ' +
      'a plain value starting with * is a YAML alias: quote the value if it is text',
    code: 'TEND_CONFIG_YAML',
  },
  {
    name: 'document without kind',
    files: { 'tend.yml': project, 'api.tend.yml': '# the api\ntype: cmd\nname: api\n' },
    error:
      'api.tend.yml:2:1: missing required key "kind"; expected one of: Project, Build, Deploy, Test, Run',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'unknown kind',
    files: { 'tend.yml': project, 'api.tend.yml': 'kind: Deplyo\ntype: cmd\nname: api\n' },
    error:
      'api.tend.yml:1:7: unknown kind "Deplyo"; did you mean "Deploy"? expected one of: Project, Build, Deploy, Test, Run',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'document that is not a mapping',
    files: { 'tend.yml': project, 'api.tend.yml': build + '---\n- kind: Build\n' },
    error:
      'api.tend.yml:6:1: expected a mapping with a "kind" key (one of: Project, Build, Deploy, Test, Run), got a list',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'tend.yml without a Project document',
    files: { 'tend.yml': build },
    error: 'tend.yml:1:1: tend.yml has no Project document; expected one with "kind: Project"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'Project document outside tend.yml',
    files: {
      'tend.yml': project,
      'sub/x.tend.yml': 'kind: Project\nname: other\nenvironments: [{ name: dev }]\n',
    },
    error:
      'sub/x.tend.yml:1:1: a Project document belongs in tend.yml at the project root, not in sub/x.tend.yml',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'project name that is not a DNS label',
    files: { 'tend.yml': project.replace('name: shop', 'name: Shop_1') },
    error:
      'tend.yml:2:7: invalid value for name: expected a name of lower-case letters, digits and "-", starting and ' +
      'ending with a letter or digit (at most 63 characters), got "Shop_1"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'action name that is not a DNS label',
    files: { 'tend.yml': project, 'api.tend.yml': build.replace('name: api', 'name: api-') },
    error:
      'api.tend.yml:3:7: invalid value for name: expected a name of lower-case letters, digits and "-", starting ' +
      'and ending with a letter or digit (at most 63 characters), got "api-"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'missing required key',
    files: { 'tend.yml': project, 'api.tend.yml': 'kind: Build\nname: api\n' },
    error: 'api.tend.yml:1:1: missing required key "type" in action build.api',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'a cleanup duration over 365 days',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup: { afterInactivity: 366d }
      `,
    },
    error:
      'tend.yml:5:33: invalid value for environments[0].cleanup.afterInactivity: expected a duration of at most 365 days: a whole ' +
      'number followed by m, h or d (e.g. 30m, 8h, 3d), got "366d"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'bad cleanup duration',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup: { afterInactivity: 8 hours }
      `,
    },
    error:
      'tend.yml:5:33: invalid value for environments[0].cleanup.afterInactivity: expected a duration of at most 365 days: a whole ' +
      'number followed by m, h or d (e.g. 30m, 8h, 3d), got "8 hours"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'bad cleanup action',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: destroy
      `,
    },
    error:
      'tend.yml:7:15: invalid value for environments[0].cleanup.action: expected one of: delete, pause, got "destroy"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'schedule with an unknown time zone',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: pause
              schedule:
                sleepAt: "20:00"
                wakeAt: "08:00"
                weekdays: [mon, tue, wed]
                timeZone: Europe/Berlln
      `,
    },
    error:
      'tend.yml:12:19: invalid value for environments[0].cleanup.schedule.timeZone: expected an IANA time zone name such as Europe/Berlin or America/New_York, got "Europe/Berlln"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'schedule with a fixed offset instead of a zone',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: pause
              schedule:
                sleepAt: "20:00"
                wakeAt: "08:00"
                weekdays: [mon, tue, wed]
                timeZone: UTC+2
      `,
    },
    error:
      'tend.yml:12:19: invalid value for environments[0].cleanup.schedule.timeZone: expected an IANA time zone name such as Europe/Berlin or America/New_York, got "UTC+2"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'schedule zone in the wrong case',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: pause
              schedule:
                sleepAt: "20:00"
                wakeAt: "08:00"
                weekdays: [mon, tue, wed]
                timeZone: europe/berlin
      `,
    },
    error:
      'tend.yml:12:19: invalid value for environments[0].cleanup.schedule.timeZone: expected an IANA time zone name such as Europe/Berlin or America/New_York, got "europe/berlin" (did you mean Europe/Berlin?)',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'schedule with a bad time',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: pause
              schedule:
                sleepAt: "20:00"
                wakeAt: "8:00"
                weekdays: [mon, tue, wed]
                timeZone: Europe/Berlin
      `,
    },
    error:
      'tend.yml:10:17: invalid value for environments[0].cleanup.schedule.wakeAt: expected a local time HH:MM, 24-hour (e.g. 08:00, 20:30), got "8:00"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'schedule with an unknown weekday',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: pause
              schedule:
                sleepAt: "20:00"
                wakeAt: "08:00"
                weekdays: [mon, tue, friday]
                timeZone: Europe/Berlin
      `,
    },
    error:
      'tend.yml:11:30: invalid value for environments[0].cleanup.schedule.weekdays[2]: expected one of: mon, tue, wed, thu, fri, sat, sun, got "friday"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'schedule that never sleeps',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: pause
              schedule:
                sleepAt: "08:00"
                wakeAt: "08:00"
                weekdays: [mon, tue, wed]
                timeZone: Europe/Berlin
      `,
    },
    error:
      'tend.yml:9:18: sleepAt and wakeAt are both 08:00; expected two different times (awake from wakeAt until sleepAt)',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'schedule with an unknown key',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup:
              afterInactivity: 8h
              action: pause
              schedule:
                sleepAt: "20:00"
                wakeAt: "08:00"
                weekdays: [mon, tue, wed]
                timeZone: Europe/Berlin
                timezone: Europe/Berlin
      `,
    },
    error:
      'tend.yml:13:9: unknown key "timezone" in environments[0].cleanup.schedule; did you mean "timeZone"? expected one of: sleepAt, wakeAt, weekdays, timeZone',
    code: 'TEND_CONFIG_UNKNOWN_KEY',
  },
  {
    name: 'bad warnBefore',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            cleanup: { afterInactivity: 8h, warnBefore: soon }
      `,
    },
    error:
      'tend.yml:5:49: invalid value for environments[0].cleanup.warnBefore: expected a duration of at most 365 days: a whole ' +
      'number followed by m, h or d (e.g. 30m, 8h, 3d), got "soon"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'bad afterClose',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: pr
            cleanup:
              afterInactivity: 3d
              afterClose: -1h
      `,
    },
    error:
      'tend.yml:7:19: invalid value for environments[0].cleanup.afterClose: expected a duration of at most 365 days: a whole ' +
      'number followed by m, h or d (e.g. 30m, 8h, 3d), got "-1h"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'bad pullRequest repository',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: pr
            pullRequest: { repository: shop, number: 1 }
      `,
    },
    error:
      'tend.yml:5:32: invalid value for environments[0].pullRequest.repository: expected a GitHub repository as owner/name (e.g. acme/shop), got "shop"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'unknown key in pullRequest',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: pr
            pullRequest: { repository: acme/shop, number: 1, repo: x }
      `,
    },
    error:
      'tend.yml:5:54: unknown key "repo" in environments[0].pullRequest; expected one of: repository, number',
    code: 'TEND_CONFIG_UNKNOWN_KEY',
  },
  {
    name: 'bad timeout',
    files: { 'tend.yml': project, 'api.tend.yml': build + 'timeout: 5 minutes\n' },
    error:
      'api.tend.yml:5:10: invalid value for timeout: expected a duration: seconds as a number, ' +
      'or a whole number followed by ms, s, m or h, got "5 minutes"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'defaultEnvironment that is not an environment',
    files: { 'tend.yml': project + 'defaultEnvironment: prod\n' },
    error:
      'tend.yml:5:21: defaultEnvironment "prod" is not one of the environments; expected one of: dev, preview',
    code: 'TEND_ENVIRONMENT_NOT_FOUND',
  },
  {
    name: 'provider limited to an unknown environment',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments: [{ name: dev }, { name: preview }]
        providers:
          - name: local
            environments: [dev, prod]
      `,
    },
    error:
      'tend.yml:6:25: unknown environment "prod" in providers[0].environments; expected one of: dev, preview',
    code: 'TEND_ENVIRONMENT_NOT_FOUND',
  },
  {
    name: 'an action with a problem of its own: what depends on it or reads its outputs is no further error',
    files: {
      'tend.yml': project,
      // The dependent action's file first: an error there would be the one shown.
      'a.tend.yml':
        'kind: Run\ntype: cmd\nname: a\ndependencies: [run.b]\n' +
        'spec: { command: [echo, "${actions.run.b.outputs.log}"] }\n',
      'b.tend.yml': 'kind: Run\ntype: cmd\nname: b\nvarfiles: [missing.yml]\nspec: { command: [b] }\n',
    },
    error: 'b.tend.yml:4:12: varfile missing.yml does not exist (missing.yml in the project)',
    code: 'TEND_CONFIG_NOT_FOUND',
  },
  {
    name: 'unknown provider',
    files: { 'tend.yml': project.replace('{ name: local }', '{ name: local }, { name: clustr }') },
    error: 'tend.yml:4:38: unknown provider "clustr"; expected one of: local, cluster',
    code: 'TEND_PROVIDER_NOT_FOUND',
  },
  {
    name: "unknown key in a provider's configuration",
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments: [{ name: dev }]
        providers:
          - name: cluster
            contxt: my-cluster
      `,
    },
    error:
      'tend.yml:6:5: unknown key "contxt" in providers[0] (cluster); did you mean "context"? expected one of: name, environments, plugin, ' +
      'context, namespace, buildMode, replicas',
    code: 'TEND_CONFIG_UNKNOWN_KEY',
  },
  {
    name: 'a provider listed twice for one environment in tend.yml (Garden files merge such entries)',
    files: {
      'tend.yml': project.replace(
        '[{ name: local }]',
        '[{ name: local }, { name: local, environments: [preview] }]',
      ),
    },
    error:
      'tend.yml:4:38: provider "local" is listed twice for the same environments; first at tend.yml:4:13 (list it twice only with separate environments:)',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: "invalid value in a provider's configuration",
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments: [{ name: dev }]
        providers:
          - name: cluster
            buildMode: docker
      `,
    },
    error:
      'tend.yml:6:16: invalid value for providers[0].buildMode: expected one of: cluster-buildkit, kaniko, got "docker"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'unknown action type',
    files: { 'tend.yml': project, 'api.tend.yml': build.replace('type: cmd', 'type: cmnd') },
    error: 'api.tend.yml:2:7: unknown action type "cmnd" for kind Build; expected one of: cmd, image',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'action type that does not support the kind',
    files: { 'tend.yml': project, 'api.tend.yml': 'kind: Deploy\ntype: image\nname: api\n' },
    error:
      'api.tend.yml:2:7: action type "image" does not support kind Deploy (it supports: Build); ' +
      'types for Deploy: cmd, manifests',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'provider of the action type not configured',
    files: { 'tend.yml': project, 'api.tend.yml': 'kind: Deploy\ntype: manifests\nname: api\n' },
    error:
      'api.tend.yml:2:7: action type "manifests" comes from provider "cluster", which is not listed under ' +
      'providers in tend.yml',
    code: 'TEND_PROVIDER_NOT_FOUND',
  },
  {
    name: 'spec without a required key',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Build\ntype: cmd\nname: api\nspec:\n  env: { A: b }\n',
    },
    error: 'api.tend.yml:5:3: missing required key "command" in spec',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'unknown key in a spec',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Build\ntype: cmd\nname: api\nspec:\n  command: [make]\n  cwd: x\n',
    },
    error: 'api.tend.yml:6:3: unknown key "cwd" in spec; expected one of: command, env, port, persistent',
    code: 'TEND_CONFIG_UNKNOWN_KEY',
  },
  {
    name: 'wrong type in a spec',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Deploy\ntype: cmd\nname: api\nspec:\n  command: [serve]\n  port: http\n',
    },
    error: 'api.tend.yml:6:9: invalid value for spec.port: expected a whole number, got "http"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'duplicate action names of one kind, in two files',
    files: { 'tend.yml': project + '---\n' + build, 'api/api.tend.yml': build },
    error: 'api/api.tend.yml:3:7: duplicate action build.api; first defined at tend.yml:8:7',
    code: 'TEND_CONFIG_DUPLICATE_ACTION',
  },
  {
    name: 'dependency on a missing action',
    files: { 'tend.yml': project, 'api.tend.yml': build + 'dependencies: [build.web, build.apii]\n' },
    error: 'api.tend.yml:5:16: unknown dependency "build.web" of build.api; build actions: build.api',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'dependency that is not an action reference',
    files: { 'tend.yml': project, 'api.tend.yml': build + 'dependencies: [api]\n' },
    error:
      'api.tend.yml:5:16: invalid value for dependencies[0]: expected an action reference: lower-case kind, ' +
      'dot, name (e.g. build.api), got "api"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'template reference to a missing action',
    files: {
      'tend.yml': project,
      'api.tend.yml':
        build +
        '---\nkind: Deploy\ntype: cmd\nname: api\nspec:\n  command: [run, "${actions.build.web.outputs.image}"]\n',
    },
    error:
      'api.tend.yml:10:18: unknown action "build.web" in a template expression; build actions: build.api',
    code: 'TEND_TEMPLATE',
  },
  {
    name: 'unterminated template expression',
    files: {
      'tend.yml': project,
      'api.tend.yml': 'kind: Build\ntype: cmd\nname: api\nspec:\n  command: [echo, "${var.a"]\n',
    },
    error: 'api.tend.yml:5:19: unterminated template expression "${var.a"; expected a closing "}"',
    code: 'TEND_TEMPLATE',
  },
  {
    name: 'unknown template root',
    files: {
      'tend.yml': yaml`
        kind: Project
        name: shop
        environments:
          - name: dev
            defaultNamespace: \${proj.name}-dev
      `,
    },
    error:
      'tend.yml:5:23: unknown template key "proj.name"; available: project, environment, var, local, actions',
    code: 'TEND_TEMPLATE',
  },
  {
    name: 'malformed action output reference',
    files: {
      'tend.yml': project,
      'api.tend.yml':
        build +
        '---\nkind: Test\ntype: cmd\nname: api\nspec:\n  command: [test, "${actions.build.api.image}"]\n',
    },
    error:
      'api.tend.yml:10:19: invalid action reference "actions.build.api.image"; expected ' +
      'actions.<kind>.<name>.outputs.<key> (e.g. actions.build.api.outputs.image), ' +
      'or .version, .var.<name>, .name, .disabled, .mode, .buildPath, .sourcePath',
    code: 'TEND_TEMPLATE',
  },
  {
    name: 'source directory that does not exist',
    files: { 'tend.yml': project, 'api.tend.yml': build + 'source: ./apii\n' },
    error: 'api.tend.yml:5:9: source directory "./apii" does not exist (resolved to apii in the project)',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'source outside the project',
    files: { 'tend.yml': project, 'api.tend.yml': build + 'source: ../..\n' },
    error: 'api.tend.yml:5:9: source "../.." is outside the project root',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'no environments',
    files: { 'tend.yml': 'kind: Project\nname: shop\nenvironments: []\n' },
    error: 'tend.yml:3:15: invalid value for environments: expected a list of at least 1 item, got a list',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'variables that are not a mapping',
    files: { 'tend.yml': project + 'variables:\n  - team\n' },
    error: 'tend.yml:6:3: invalid value for variables: expected a mapping, got a list',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'server that is not a URL',
    files: { 'tend.yml': project + 'server: localhost:7420\n' },
    error:
      'tend.yml:5:9: invalid value for server: expected an http:// or https:// URL, got "localhost:7420"',
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'a value of 100,000 characters, named by its first 200',
    files: { 'tend.yml': project + `server: ${'x'.repeat(100_000)}\n` },
    error: `tend.yml:5:9: invalid value for server: expected an http:// or https:// URL, got "${'x'.repeat(200)}"… (100000 characters)`,
    code: 'TEND_CONFIG_INVALID',
  },
  {
    name: 'duplicate environment names',
    files: { 'tend.yml': 'kind: Project\nname: shop\nenvironments:\n  - name: dev\n  - name: dev\n' },
    error: 'tend.yml:5:11: duplicate environment "dev"; first defined at tend.yml:4:11',
    code: 'TEND_CONFIG_INVALID',
  },
];

describe('invalid configuration', () => {
  it.each(cases)('$name', async ({ files, error, code }) => {
    const root = await writeProject(files);
    const thrown = await loadProjectConfig({ cwd: root, plugins: testPlugins }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(TendError);
    const tendError = thrown as TendError;
    expect(tendError.toString().split('\n')[0]).toBe(error);
    expect(tendError.code).toBe(code);
    expect(tendError.exitCode).toBe(2);
  });

  it('has at least 15 distinct cases', () => {
    expect(new Set(cases.map((c) => c.error)).size).toBe(cases.length);
    expect(cases.length).toBeGreaterThanOrEqual(15);
  });

  it('reports every problem of a load, in file and line order', async () => {
    const root = await writeProject({
      'tend.yml': project + 'servr: x\n',
      'b.tend.yml': 'kind: Build\ntype: cmd\nname: B\n',
      'a.tend.yml':
        build + 'dependencies: [build.nope]\n---\nkind: Run\ntype: cmd\nname: x\nspec: { command: 1 }\n',
    });
    const thrown = (await loadProjectConfig({ cwd: root, plugins: testPlugins }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(thrown.toString().split('\n')).toEqual([
      'tend.yml:5:1: unknown key "servr" in the Project document; did you mean "server"? expected one of: kind, name, defaultEnvironment, ' +
        'variables, varfiles, environments, providers, server',
      'a.tend.yml:5:16: unknown dependency "build.nope" of build.api; build actions: build.api',
      'a.tend.yml:10:18: invalid value for spec.command: expected a list, got number 1',
      'b.tend.yml:3:7: invalid value for name: expected a name of lower-case letters, digits and "-", starting and ' +
        'ending with a letter or digit (at most 63 characters), got "B"',
      '(4 configuration errors)',
    ]);
    expect(thrown.detail?.errors).toHaveLength(4);
    expect(thrown.location).toEqual({ file: 'tend.yml', line: 5, column: 1 });
  });

  it('names every unknown key, however many (a validator keeps only its first errors), every missing key, and each item of a record of unions', async () => {
    const unknown = Array.from({ length: 9 }, (_, i) => `extra${i}: x`).join('\n');
    const root = await writeProject({ 'tend.yml': project + unknown + '\n' });
    const thrown = (await loadProjectConfig({ cwd: root, plugins: testPlugins }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(thrown).toBeInstanceOf(TendError);
    expect(thrown.exitCode).toBe(2);
    const lines = thrown.toString().split('\n');
    expect(lines[0]).toMatch(/^tend\.yml:\d+:1: unknown key "extra0" in the Project document/);
    expect(lines.filter((l) => /unknown key "extra\d"/.test(l)).length).toBeGreaterThanOrEqual(1);

    const two = await writeProject({
      'tend.yml': 'kind: Project\nname: shop\nenvironments:\n  - name: dev\n    bogus1: 1\n    bogus2: 2\n',
    });
    const both = (await loadProjectConfig({ cwd: two, plugins: testPlugins }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(both.toString()).toMatch(/unknown key "bogus1"[\s\S]*unknown key "bogus2"/);

    const records = await writeProject({ 'tend.yml': project + 'variables: { a: .inf, b: .inf }\n' });
    const each = (await loadProjectConfig({ cwd: records, plugins: testPlugins }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(each.toString()).toMatch(/variables\.a[\s\S]*variables\.b/);
  });

  it('says where to create tend.yml when there is none', async () => {
    const root = await writeProject({ 'sub/': '' });
    await expect(loadProjectConfig({ root, cwd: root, plugins: testPlugins })).rejects.toMatchObject({
      code: 'TEND_CONFIG_NOT_FOUND',
      message: `no tend.yml in ${root} (the --root directory)`,
    });
  });

  it('says that a --root directory does not exist (or is a file) instead of where to create tend.yml', async () => {
    const root = await writeProject({ 'file.txt': 'x' });
    const missing = path.join(root, 'nope');
    const gone = (await loadProjectConfig({ root: missing, cwd: root, plugins: testPlugins }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(gone).toMatchObject({
      code: 'TEND_CONFIG_NOT_FOUND',
      message: `the --root directory ${missing} does not exist`,
    });
    expect(String(gone.detail?.hint)).not.toContain('create');
    await expect(
      loadProjectConfig({ root: 'file.txt', cwd: root, plugins: testPlugins }),
    ).rejects.toMatchObject({ message: `--root ${path.join(root, 'file.txt')} is a file, not a directory` });
  });
});
