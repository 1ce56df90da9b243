/**
 * One document of a Garden file (`garden.yml`, `*.garden.yml`) read as tend's: the Project, an
 * action, a 0.12 module's actions, a Workflow or custom Command (run by `tend workflow` and
 * `tend command`, not loaded as actions), or a kind tend does not support yet.
 */
import { actionKinds } from '../../plugin/types.js';
import { translateGardenAction } from './actions.js';
import { convertModule } from './modules.js';
import type { GardenProjectIndex } from './project-index.js';
import { translateGardenProject } from './project.js';
import { isRecord, Translation } from './translation.js';

export interface GardenDocumentContext {
  /** The absolute directory of the file (a module's Dockerfile is looked for there). */
  dir: string;
  index: GardenProjectIndex;
}

/** The documents as tend's (value undefined: nothing to load), each with what its translation found. */
export function readGardenDocument(
  value: unknown,
  context: GardenDocumentContext,
): { value: unknown; translation: Translation }[] {
  const translation = new Translation();
  if (!isRecord(value)) return [{ value, translation }];
  if (value.kind === 'Project') return [{ value: translateGardenProject(value, translation), translation }];
  if ((actionKinds as readonly unknown[]).includes(value.kind)) {
    return [{ value: translateGardenAction(value, translation, context.index), translation }];
  }
  if (value.kind === 'Module') {
    const actions = convertModule(value, context.dir, context.index, translation);
    return [
      { value: undefined, translation },
      ...actions.map((action) => {
        const moved = new Translation();
        for (const [to, from] of action.moves) moved.moved(to, from);
        const own = new Translation(moved);
        own.fromModule = String(value.name);
        return { value: translateGardenAction(action.value, own, context.index), translation: own };
      }),
    ];
  }
  if (value.kind === 'Workflow' || value.kind === 'Command') {
    translation.runnable = { kind: value.kind, value };
    return [{ value: undefined, translation }];
  }
  return [{ value, translation }];
}
