#!/bin/sh
# Installs rsyslog with TLS support (GnuTLS driver) and RELP input (imrelp) for the syslog and RELP sink
# tests. Idempotent and quiet: does nothing when rsyslogd, its TLS driver and imrelp are already there.
# Needs root (or sudo) and apt.
set -eu

module_present() {
    for dir in /usr/lib/x86_64-linux-gnu/rsyslog /usr/lib/aarch64-linux-gnu/rsyslog /usr/lib/rsyslog; do
        [ -e "$dir/$1" ] && return 0
    done
    return 1
}

if command -v rsyslogd >/dev/null 2>&1 && module_present lmnsd_gtls.so && module_present imrelp.so; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-rsyslog.sh: no apt-get; install rsyslog, rsyslog-gnutls and rsyslog-relp by hand" >&2
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
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends rsyslog rsyslog-gnutls rsyslog-relp; } >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
fi
