// A tiny shop service: items in memory, JSON over HTTP.
import http from 'node:http';

const items = new Map([[1, { id: 1, name: 'teapot', price: 18 }]]);
let nextId = 2;

const server = http.createServer((req, res) => {
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method === 'GET' && req.url === '/healthz')
    return send(200, { ok: true, version: process.env.SHOP_BUILD ?? 'dev' });
  if (req.method === 'GET' && req.url === '/items') return send(200, [...items.values()]);
  if (req.method === 'POST' && req.url === '/items') {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      try {
        const { name, price } = JSON.parse(body);
        if (typeof name !== 'string' || typeof price !== 'number')
          return send(400, { error: 'name and price required' });
        const item = { id: nextId++, name, price };
        items.set(item.id, item);
        send(201, item);
      } catch {
        send(400, { error: 'invalid JSON' });
      }
    });
    return;
  }
  send(404, { error: 'not found' });
});

const port = Number(process.env.PORT ?? 7431);
server.listen(port, '127.0.0.1', () => console.log(`shop listening on http://127.0.0.1:${port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
