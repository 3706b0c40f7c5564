#!/bin/sh
# Installs rsyslog with TLS support (GnuTLS driver) for the syslog sink tests. Idempotent and quiet:
# does nothing when rsyslogd and its TLS driver are already there. Needs root (or sudo) and apt.
set -eu

driver_present() {
    for dir in /usr/lib/x86_64-linux-gnu/rsyslog /usr/lib/aarch64-linux-gnu/rsyslog /usr/lib/rsyslog; do
        [ -e "$dir/lmnsd_gtls.so" ] && return 0
    done
    return 1
}

if command -v rsyslogd >/dev/null 2>&1 && driver_present; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-rsyslog.sh: no apt-get; install rsyslog and rsyslog-gnutls by hand" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# apt and debconf chatter only matters when something failed
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends rsyslog rsyslog-gnutls; } >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
fi
