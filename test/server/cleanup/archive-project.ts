/**
 * The project the undo tests deploy (docs/cleanup.md#undo): a ServiceAccount, a ConfigMap, a
 * Secret, a Deployment running as the ServiceAccount and a Service — what an archive keeps and a
 * restore re-creates in order — with a cleanup policy (`extra`: more of it, e.g. `, archive: false`).
 */
export const secretsProject = (name: string, namespace: string, extra = '') => `kind: Project
name: ${name}
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${namespace}
    cleanup: { afterInactivity: 1h, action: delete${extra} }
providers:
  - name: kubernetes
    context: kube-sim
    namespaceTimeout: 20
---
kind: Deploy
type: kubernetes
name: app
spec:
  manifests:
    - { apiVersion: v1, kind: ServiceAccount, metadata: { name: runner } }
    - { apiVersion: v1, kind: ConfigMap, metadata: { name: settings }, data: { mode: blue } }
    - { apiVersion: v1, kind: Secret, metadata: { name: db-password }, stringData: { password: hunter2 } }
    - apiVersion: apps/v1
      kind: Deployment
      metadata: { name: web }
      spec:
        replicas: 2
        selector: { matchLabels: { app: web } }
        template:
          metadata: { labels: { app: web } }
          spec:
            serviceAccountName: runner
            containers: [{ name: web, image: nginx }]
    - { apiVersion: v1, kind: Service, metadata: { name: web }, spec: { selector: { app: web }, ports: [{ port: 80 }] } }
`;
