/**
 * The layering of src/ (docs/ARCHITECTURE.md#layers), checked by `npm run deps` in `npm test`:
 * no import cycles, and a folder never imports one of a higher layer (the layers, lowest first, are
 * in scripts/layers.cjs).
 */
const { layers, serverFloors } = require('./scripts/layers.cjs');

const pathOf = (layer) => `^(${layer.paths.join('|')})`;

/** For each layer of `list`, lowest first: it imports none above it (`kind`: layer or floor). */
const orderRules = (list, kind) =>
  list.flatMap((layer, i) => {
    const higher = list.slice(i + 1).filter((l) => l.name !== layer.sibling);
    const rules = [];
    if (higher.length > 0) {
      rules.push({
        name: `${kind === 'floor' ? 'server-' : ''}${layer.name}-imports-no-higher-${kind}`,
        comment: `${layer.name} sits below ${higher.map((l) => l.name).join(', ')} (docs/ARCHITECTURE.md#layers)`,
        severity: 'error',
        from: { path: pathOf(layer), ...(layer.except ? { pathNot: `^(${layer.except.join('|')})` } : {}) },
        to: { path: `^(${higher.map((l) => l.paths.join('|')).join('|')})` },
      });
    }
    if (layer.sibling) {
      const sibling = layers.find((l) => l.name === layer.sibling);
      rules.push({
        name: `${layer.name}-never-imports-${sibling.name}`,
        comment: `the CLI and the server are two programs: ${layer.name} never imports ${sibling.name}`,
        severity: 'error',
        from: { path: pathOf(layer) },
        to: { path: pathOf(sibling) },
      });
    }
    return rules;
  });

const layerRules = [...orderRules(layers, 'layer'), ...orderRules(serverFloors, 'floor')];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no two files import each other, directly or through others (type imports included)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'src-never-imports-kube-sim',
      comment: 'the simulator is a test fixture',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^tools/' },
    },
    {
      name: 'plugins-never-import-config',
      comment: 'templates reach plugins through ctx.resolveTemplates, not src/config/',
      severity: 'error',
      from: { path: '^src/plugins/' },
      to: { path: '^src/config/' },
    },
    {
      name: 'expressions-stand-alone',
      comment:
        'the template language (src/expressions/) imports only itself and the base files of src/: nothing of the configuration that uses it (docs/ARCHITECTURE.md#layers)',
      severity: 'error',
      from: { path: '^src/expressions/' },
      to: { path: '^src/', pathNot: '^src/(expressions/|[^/]+\\.ts$)' },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '\\.d\\.ts$' },
  },
};
