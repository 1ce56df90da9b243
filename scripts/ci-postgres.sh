#!/usr/bin/env bash
# Starts the local PostgreSQL 15 cluster for the server tests and gives the `postgres` role the
# password the tests use (TEND_TEST_DATABASE_URL defaults to
# postgres://postgres:postgres@127.0.0.1:5432/postgres). Creates nothing else: every test file
# creates and drops its own database.
set -euo pipefail

version="${PG_VERSION:-15}"
cluster="${PG_CLUSTER:-main}"

if ! pg_lsclusters --no-header | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c && $4 == "online" { found = 1 } END { exit !found }'; then
  pg_ctlcluster "$version" "$cluster" start
fi

# Wait until the server accepts connections (pg_ctlcluster returns once it is up, but be safe).
for _ in $(seq 1 50); do
  if pg_isready -q -h 127.0.0.1 -p 5432; then break; fi
  sleep 0.2
done
pg_isready -h 127.0.0.1 -p 5432

# Peer authentication over the Unix socket as the postgres OS user; TCP uses scram-sha-256.
if [ "$(id -u)" = "0" ]; then
  su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\""
else
  sudo -u postgres psql -q -c "ALTER USER postgres PASSWORD 'postgres'"
fi
echo "PostgreSQL $version/$cluster ready at postgres://postgres:postgres@127.0.0.1:5432/postgres"
