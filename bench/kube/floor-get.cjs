// The floor of a Kubernetes command on Node (bench/kube-commands.ts): Node starts, loads node:https,
// reads the cluster's address, CA and token (a JSON file the bench writes from kube-sim's
// kubeconfig), lists the namespaces over TLS and parses the answer, as `kubectl get ns` does.
// Nothing of tend: what a command costs beyond it is tend's own.
'use strict';
const { readFileSync } = require('node:fs');
const https = require('node:https');

const { server, ca, token } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
https
  .get(`${server}/api/v1/namespaces`, { ca, headers: { authorization: `Bearer ${token}` } }, (response) => {
    const chunks = [];
    response.on('data', (chunk) => chunks.push(chunk));
    response.on('end', () => {
      const list = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (response.statusCode !== 200 || !Array.isArray(list.items)) {
        process.stderr.write(`GET /api/v1/namespaces answered ${response.statusCode}\n`);
        process.exitCode = 1;
      }
    });
  })
  .on('error', (error) => {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
  });
