// Seeds the running service with sample items.
const url = process.env.SHOP_URL;
for (const [name, price] of [
  ['kettle', 30],
  ['mug', 6],
  ['saucer', 3],
]) {
  const response = await fetch(`${url}/items`, { method: 'POST', body: JSON.stringify({ name, price }) });
  if (response.status !== 201) throw new Error(`seeding ${name} failed: ${response.status}`);
}
console.log('seeded 3 items');
