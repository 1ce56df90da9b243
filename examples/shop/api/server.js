import { createServer } from 'node:http';

createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ service: 'shop-api', path: req.url }));
}).listen(8080);
