#!/usr/bin/env bash
# Installs what `make bench` needs beside Go: numpy for the numpy peer
# (Debian's python3-numpy), GNU time for peak RSS, and checks for node (the
# peers themselves are in bench/peers).
set -euo pipefail
cd "$(dirname "$0")/.."
need_update=1
apt_install() {
	if [ "$need_update" = 1 ]; then apt-get update -qq; need_update=0; fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
# python3 may be another interpreter (pyenv) than Debian's, which sees
# python3-numpy: the bench uses the first of python3, /usr/bin/python3 with numpy.
if ! python3 -c 'import numpy' 2>/dev/null && ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "bench: installing python3-numpy (apt)" >&2
	apt_install python3-numpy || { echo "bench: cannot install numpy: run 'apt-get install python3-numpy' as root" >&2; exit 1; }
fi
if [ ! -x /usr/bin/time ]; then
	echo "bench: installing time (apt)" >&2
	apt_install time || { echo "bench: cannot install GNU time: run 'apt-get install time' as root" >&2; exit 1; }
fi
command -v node >/dev/null || { echo "bench: node is missing: install Node.js 20+ (e.g. apt-get install nodejs)" >&2; exit 1; }
