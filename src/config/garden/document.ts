/**
 * One document of a Garden file (`garden.yml`, `*.garden.yml`) read as tend's: the Project, an
 * action, or a kind tend reads but does not run (Workflow, Command) or does not support yet.
 */
import { actionKinds } from '../../plugin/types.js';
import { otherGardenKind, translateGardenAction } from './actions.js';
import { translateGardenProject } from './project.js';
import { isRecord, Translation } from './translation.js';

/** The document as tend's (undefined: nothing to load), and what the translation found. */
export function readGardenDocument(value: unknown): { value: unknown; translation: Translation } {
  const translation = new Translation();
  if (!isRecord(value)) return { value, translation };
  if (value.kind === 'Project') return { value: translateGardenProject(value, translation), translation };
  if ((actionKinds as readonly unknown[]).includes(value.kind)) {
    return { value: translateGardenAction(value, translation), translation };
  }
  if (otherGardenKind(value, translation, ['kind'])) return { value: undefined, translation };
  return { value, translation };
}
