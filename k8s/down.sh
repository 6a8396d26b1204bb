#!/usr/bin/env bash
# Stops the local cluster and removes its state (keeps the build cache):
# the kubelet first (so nothing restarts pods), then every pod's containers
# through the private containerd, the rest of the components (whole process
# groups), leftover shims, mounts the kubelet or the CRI left (pod volumes,
# sandbox /dev/shm, rootfs, network namespaces) and the pods' cgroups.
# Never touches Docker's containerd.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
repo=$(cd "$here/.." && pwd)

[ "$(id -u)" = 0 ] || { k8s_log "must run as root"; exit 1; }

# stop NAME: SIGTERM to the component's process group, SIGKILL after 10s.
stop() {
  local pid
  pid=$(k8s_pid "$1") || { rm -f "$K8S_RUN/$1.pid"; return 0; }
  k8s_log "stopping $1 (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null
  rm -f "$K8S_RUN/$1.pid"
}

stop kubelet

# Every container and sandbox of the cluster, while containerd still runs.
if k8s_pid containerd >/dev/null; then
  for id in $(k8s_ctr containers ls -q 2>/dev/null); do
    k8s_ctr tasks kill -s SIGKILL "$id" >/dev/null 2>&1
  done
  for id in $(k8s_ctr containers ls -q 2>/dev/null); do
    for _ in $(seq 1 20); do
      k8s_ctr tasks delete -f "$id" >/dev/null 2>&1 && break
      k8s_ctr tasks ls -q 2>/dev/null | grep -qx "$id" || break
      sleep 0.25
    done
    k8s_ctr containers delete "$id" >/dev/null 2>&1
  done
fi

for c in $(echo "$K8S_COMPONENTS" | tr ' ' '\n' | tac); do
  [ "$c" = kubelet ] || stop "$c"
done

# Shims of our containerd (they run in their own process groups).
for p in $(pgrep -f "containerd-shim.*-address $K8S_CONTAINERD_SOCK" 2>/dev/null); do
  kill -KILL "$p" 2>/dev/null
done

# Mounts under our dirs (deepest first): pod volumes, sandbox /dev/shm,
# rootfs, and the pods' network namespaces (netns_mounts_under_state_dir).
for m in $(awk '{print $2}' /proc/self/mounts | grep -E "^($K8S_STATE|$K8S_RUN)(/|$)" | sort -r); do
  umount -l "$m" 2>/dev/null
done

# The pods' cgroups (cgroupfs driver), deepest first; only empty ones go.
for root in /sys/fs/cgroup/*"$K8S_CGROUP_ROOT" /sys/fs/cgroup"$K8S_CGROUP_ROOT"; do
  [ -d "$root" ] && find "$root" -depth -type d -exec rmdir {} + 2>/dev/null
done

# What the kubelet keeps at fixed host paths: its device-plugin socket and
# the /var/log/containers links to our pods' logs.
rm -f /var/lib/kubelet/device-plugins/kubelet.sock
rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null
find /var/log/containers -maxdepth 1 -type l -lname "$K8S_STATE/*" -delete 2>/dev/null
rmdir /var/log/containers 2>/dev/null

# The host's kernel tunables, if the kubelet changed them.
if [ -s "$K8S_STATE/sysctl.orig" ]; then
  while IFS= read -r kv; do sysctl -q -w "$kv" || true; done <"$K8S_STATE/sysctl.orig"
fi

rm -rf "$K8S_STATE" "$K8S_RUN" "$repo/.k8s"
k8s_log "down (build cache kept in $K8S_CACHE)"
