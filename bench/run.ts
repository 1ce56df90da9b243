/**
 * `npm run bench`: every benchmark under bench/, one after another, each printing its figures
 * and ratios against a baseline measured in the same process.
 */
const suites = ['graph', 'events', 'kube-sim', 'server-ingest', 'stream'];

for (const name of suites) {
  let suite: { run(): Promise<void> };
  try {
    suite = (await import(`./${name}.js`)) as { run(): Promise<void> };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') continue;
    throw error;
  }
  console.log(`\n== ${name} ==`);
  await suite.run();
}
