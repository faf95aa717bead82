#!/usr/bin/env bash
# The round trip through real proxies (docs/deploy.md): exports a policy to
# nginx and to HAProxy, starts each real server on a free 127.0.0.1 port with
# the exported configuration, replays a 20-second trace of known timing over
# four keys and compares every response with the model, decision by decision
# (export/proxies_test.go; the servers are started and stopped by PID there);
# proves --key global limits in real nginx; and runs nginx -t / haproxy -c on
# the export of every entry of the fuzz corpus (FuzzExport's seeds, with the
# injections that once reached a configuration, and testdata/fuzz/FuzzExport).
# Installs Debian's nginx and haproxy if missing (root). About 45 s.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin"
missing=""
command -v nginx >/dev/null || missing="$missing nginx"
command -v haproxy >/dev/null || missing="$missing haproxy"
command -v fail2ban-server >/dev/null || missing="$missing fail2ban"
if [ -n "$missing" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "test-proxies: $(nginx -v 2>&1), $(haproxy -v | head -1)"
go test -tags proxies -count=1 -run 'TestProxies' -v ./export ${GOTESTFLAGS:-} | grep -E '^(test-proxies:|--- |ok|FAIL|PASS)|proxies_test.go' 
