/**
 * Where a namespace (or any environment resource a plugin records) lives, as events carry it and
 * both programs key it. A target is its plugin's: the kubernetes plugin's clusters
 * (`{kind: 'kubernetes', clusterId, server, context}`), the exec plugin's hosts
 * (`{kind: 'local', hostId, path}`), and any other plugin's own kind
 * (`{kind: 'plugin', targetKind, id, path?, label?}`, `targetKind` as the plugin declares it in its
 * cleanup handlers). tend never interprets a target beyond its key: `<kind>/<id>` names the place
 * an executor serves, `<kind>/<id>/<path>` the resource's place in it when the target has a path
 * (a project directory of a host, a plugin's root).
 */
import { Type, type Static } from 'typebox';

const Name = Type.String({ minLength: 1, maxLength: 253 });
const ShortText = Type.String({ maxLength: 1024 });
const Path = Type.String({ minLength: 1, maxLength: 4096 });

/** A plugin's own target kind: lower-case, not one of the built-in kinds. */
export const targetKindPattern = '^(?!kubernetes$|local$|plugin$)[a-z][a-z0-9-]{0,62}$';

export const Target = Type.Union([
  Type.Object(
    { kind: Type.Literal('kubernetes'), clusterId: Name, server: ShortText, context: ShortText },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal('local'), hostId: Name, path: Path }, { additionalProperties: false }),
  Type.Object(
    {
      kind: Type.Literal('plugin'),
      /** The plugin's own kind of target: the first part of the target's key. */
      targetKind: Type.String({ pattern: targetKindPattern }),
      /** The place the plugin's executor serves (a host, an account, a cluster of its own). */
      id: Type.String({ minLength: 1, maxLength: 253, pattern: '^[^/]+$' }),
      /** Where in that place the resource is, when it takes a path to tell apart. */
      path: Type.Optional(Path),
      /** For people: how the dashboard and the CLI name the target. */
      label: Type.Optional(ShortText),
    },
    { additionalProperties: false },
  ),
]);
export type Target = Static<typeof Target>;

/** `<kind>/<id>`: what one executor serves. */
export const targetKeyRegExp = new RegExp('^[a-z][a-z0-9-]{0,62}/[^/]+$');
export const TargetKey = Type.String({
  minLength: 3,
  maxLength: 300,
  pattern: targetKeyRegExp.source,
  description: '`<kind>/<id>`: `kubernetes/<clusterId>`, `local/<hostId>`, or a plugin’s own kind.',
});

/** The target's kind, id and path, whatever its shape. */
function partsOf(target: Target): { kind: string; id: string; path?: string } {
  switch (target.kind) {
    case 'kubernetes':
      return { kind: 'kubernetes', id: target.clusterId };
    case 'local':
      return { kind: 'local', id: target.hostId, path: target.path };
    case 'plugin':
      return {
        kind: target.targetKind,
        id: target.id,
        ...(target.path !== undefined ? { path: target.path } : {}),
      };
  }
}

/** The resource's place: `<kind>/<id>`, and `/<path>` when the target has one. */
export function targetKey(target: Target): string {
  const { kind, id, path } = partsOf(target);
  return path === undefined ? `${kind}/${id}` : `${kind}/${id}/${path}`;
}

/** The executor target a resource's place belongs to: its first two parts. */
export function executorTargetOf(resourceTargetKey: string): string {
  const first = resourceTargetKey.indexOf('/');
  const second = first === -1 ? -1 : resourceTargetKey.indexOf('/', first + 1);
  return second === -1 ? resourceTargetKey : resourceTargetKey.slice(0, second);
}

/**
 * The executor target a job's recorded target names (`<kind>/<id>`), read leniently — a job's
 * target is the server's copy of an event's — or undefined when it names none.
 */
export function executorTargetKeyOfRecorded(recorded: Record<string, unknown>): string | undefined {
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const [kind, id] =
    recorded.kind === 'kubernetes'
      ? ['kubernetes', text(recorded.clusterId)]
      : recorded.kind === 'local'
        ? ['local', text(recorded.hostId)]
        : recorded.kind === 'plugin'
          ? [text(recorded.targetKind), text(recorded.id)]
          : [];
  return kind && id && !id.includes('/') ? `${kind}/${id}` : undefined;
}
