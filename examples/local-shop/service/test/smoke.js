// Smoke test: the service answers, lists items, and accepts a new one.
const url = process.env.SHOP_URL;
if (!url) throw new Error('SHOP_URL is not set');

const health = await fetch(`${url}/healthz`).then((r) => r.json());
if (!health.ok) throw new Error(`unhealthy: ${JSON.stringify(health)}`);
const created = await fetch(`${url}/items`, {
  method: 'POST',
  body: JSON.stringify({ name: 'cup', price: 4 }),
});
if (created.status !== 201) throw new Error(`POST /items answered ${created.status}`);
const items = await fetch(`${url}/items`).then((r) => r.json());
if (!items.some((i) => i.name === 'cup')) throw new Error('the new item is not listed');
console.log(`smoke test passed against ${url} (build ${health.version}, ${items.length} items)`);
