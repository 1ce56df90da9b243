/**
 * The text of the files `tend init` writes: YAML with a comment on each document saying why it
 * is there, so the configuration explains itself to whoever opens it next.
 */
import { Document, isScalar, isSeq, visit } from 'yaml';
import type { InitPlan, PlannedAction } from './plan.js';

/** The environment init writes, and its cleanup policy. */
export const initEnvironment = {
  name: 'dev',
  cleanup: { afterInactivity: '8h', action: 'delete' },
} as const;

/** The registry a container Build pushes to until the user names theirs (kind's local registry). */
export const defaultRegistry = 'localhost:5000';

export function devNamespace(project: string): string {
  return `${project}-\${local.username}`;
}

/** `text` as comment lines of at most ~100 characters. */
function comment(text: string, indent = ''): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + word.length + 1 > 98) {
      lines.push(line);
      line = '';
    }
    line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.map((l) => `${indent}# ${l}\n`).join('');
}

function projectDocument(plan: InitPlan): string {
  const builds = plan.actions.some((a) => a.type === 'container');
  const lines = [
    comment(
      'Written by tend init: the project, its dev environment and the providers its actions use. ' +
        'Reference: docs/configuration.md; `tend schema` prints a JSON Schema for editors.',
    ),
    'kind: Project\n',
    `name: ${plan.project}\n`,
    `defaultEnvironment: ${initEnvironment.name}\n`,
  ];
  if (builds) {
    lines.push(
      'variables:\n',
      comment(
        'The registry your cluster pulls images from: container builds push there. ' +
          'Set it here or per command: --var registry=registry.example.com',
        '  ',
      ),
      `  registry: ${defaultRegistry}\n`,
    );
  }
  lines.push(
    'environments:\n',
    `  - name: ${initEnvironment.name}\n`,
    comment("each developer's own namespace (a directory .tend/envs/<namespace>/ for exec actions)", '    '),
    `    defaultNamespace: ${devNamespace(plan.project)}\n`,
    comment(
      'a tend server deletes the environment after 8 hours without activity (tend keep-alive postpones it)',
      '    ',
    ),
    '    cleanup:\n',
    `      afterInactivity: ${initEnvironment.cleanup.afterInactivity}\n`,
    `      action: ${initEnvironment.cleanup.action}\n`,
    'providers:\n',
  );
  for (const provider of plan.providers) {
    lines.push(`  - name: ${provider}\n`);
    if (provider === 'kubernetes') {
      lines.push(
        comment('context: my-cluster   (a kubeconfig context; default: the current one, as kubectl)', '    '),
      );
      if (builds) lines.push(`    deploymentRegistry: \${var.registry}/${plan.project}\n`);
    }
  }
  return lines.join('');
}

function actionDocument(action: PlannedAction): string {
  const value: Record<string, unknown> = { kind: action.kind, type: action.type, name: action.name };
  if (action.dependencies.length > 0) value.dependencies = action.dependencies;
  if (Object.keys(action.spec).length > 0) value.spec = action.spec;
  const document = new Document(value);
  // Short lists of plain values on one line: `command: [npm, start]`.
  visit(document, {
    Seq(_, node) {
      if (isSeq(node) && node.items.every((item) => isScalar(item))) node.flow = true;
    },
  });
  const notes = action.notes.map((note) => comment(`note: ${note}`)).join('');
  return comment(action.because) + notes + document.toString({ lineWidth: 0, flowCollectionPadding: false });
}

/** The text of each file of the plan. */
export function renderFiles(plan: InitPlan): { path: string; content: string }[] {
  return plan.files.map((file) => {
    const documents = [...file.actions]
      .sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'Build' ? -1 : 1))
      .map(actionDocument);
    if (file.path === 'tend.yml') documents.unshift(projectDocument(plan));
    return { path: file.path, content: documents.join('---\n') };
  });
}
