#!/usr/bin/env bash
# Runs the redisstate tests against a real Redis (docs/keys.md): installs
# Debian's redis-server if missing, starts it on a free 127.0.0.1 port with no
# persistence, runs `go test ./redisstate` with RATESWEEP_REDIS set, and stops
# the server by its PID whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
port=""
for p in $(shuf -i 20000-60000 -n 50); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "test-redis: no free port found" >&2; exit 1; }
redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --daemonize no >/dev/null &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null
echo "test-redis: redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') pid $pid on 127.0.0.1:$port"
RATESWEEP_REDIS="127.0.0.1:$port" go test -count=1 ./redisstate -v ${GOTESTFLAGS:-}
