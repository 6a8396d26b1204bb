#!/usr/bin/env bash
# What `make test` needs beside Go and a running Docker engine, installed
# and registered when missing: gVisor's runsc (registered with the running
# engine by a reload, never a restart), Podman + catatonit (the
# Docker-compatible API tier), e2fsprogs + mount (copy mode's disk bound),
# chromium (the audit viewer's browser tests) and debootstrap (the offline
# base image). As root it installs them with apt; otherwise it prints the one
# command to run and which suites will fail without them. Idempotent: on a
# prepared machine it checks and returns in well under a second.
set -euo pipefail
log() { echo "== test-deps: $*"; }

missing=()
command -v runsc >/dev/null 2>&1 || missing+=(runsc)
{ command -v podman >/dev/null 2>&1 && command -v catatonit >/dev/null 2>&1; } || missing+=(podman catatonit)
{ command -v mkfs.ext4 >/dev/null 2>&1 && command -v losetup >/dev/null 2>&1; } || missing+=(e2fsprogs mount)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1 && ! command -v debootstrap >/dev/null 2>&1; then
  missing+=(debootstrap debian-archive-keyring)
fi
command -v tmux >/dev/null 2>&1 || missing+=(tmux)

root=0; [ "$(id -u)" = 0 ] && root=1

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$root" = 1 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    log "missing: ${missing[*]}"
    log "run: sudo apt-get install -y ${missing[*]}"
    log "without them the gVisor, Podman, disk-bound and viewer suites fail under make test"
  fi
fi

# runsc registered with the engine, with the arguments agentbox needs:
# --network=none (gVisor cannot set up its own network in the engine's root
# namespace here; agentbox sandboxes use none or proxy, lo only),
# --host-uds=open (the proxy's socket mounted in can be connected to),
# --oci-seccomp (gVisor applies agentbox's seccomp rules: no set-id bits).
registered() {
  docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"' &&
    grep -q -- '--oci-seccomp' /etc/docker/daemon.json 2>/dev/null
}
if command -v runsc >/dev/null 2>&1 && ! registered; then
  if [ "$root" != 1 ]; then
    log "runsc is not registered with the engine; as root run: make test (it registers it), or add it to /etc/docker/daemon.json and reload dockerd"
    exit 0
  fi
  pid=$(pidof dockerd || true)
  if [ -z "$pid" ]; then
    log "runsc: no local dockerd process to reload; register runsc with your engine by hand (see scripts/test-deps.sh)"
    exit 0
  fi
  log "registering runsc with the engine (daemon.json, then SIGHUP: a reload, not a restart)"
  python3 - "$(command -v runsc)" <<'PY'
import json, os, sys
p = "/etc/docker/daemon.json"
d = json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) > 0 else {}
d.setdefault("runtimes", {})["runsc"] = {"path": sys.argv[1], "runtimeArgs": ["--network=none", "--host-uds=open", "--oci-seccomp"]}
os.makedirs(os.path.dirname(p), exist_ok=True)
tmp = p + ".agentbox-tmp"
with open(tmp, "w") as f:
    json.dump(d, f, indent=2)
os.replace(tmp, p)
PY
  kill -HUP $pid
  for _ in $(seq 1 60); do registered && break; sleep 0.5; done
  registered || { log "runsc did not register with the engine (see dockerd's log)"; exit 1; }
fi
exit 0
