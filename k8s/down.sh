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

k8s_stop kubelet

# Every container and sandbox of the cluster, while containerd still runs:
# SIGKILL all, give them 10s to exit, then delete each (bounded: a wedged
# task is left to the shim kill below).
ctr_t() { timeout 10 ctr --address "$K8S_CONTAINERD_SOCK" -n k8s.io "$@" >/dev/null 2>&1; }
if k8s_pid containerd >/dev/null; then
  ids=$(timeout 10 ctr --address "$K8S_CONTAINERD_SOCK" -n k8s.io containers ls -q 2>/dev/null)
  for id in $ids; do ctr_t tasks kill -s SIGKILL "$id"; done
  for _ in $(seq 1 40); do
    timeout 10 ctr --address "$K8S_CONTAINERD_SOCK" -n k8s.io tasks ls 2>/dev/null | grep -q RUNNING || break
    sleep 0.25
  done
  for id in $ids; do
    ctr_t tasks delete -f "$id"
    ctr_t containers delete "$id"
  done
fi

for c in $(echo "$K8S_COMPONENTS" | tr ' ' '\n' | tac); do
  [ "$c" = kubelet ] || k8s_stop "$c"
done

# gVisor sandboxes that are left (their processes are not the shims').
if [ -d "$K8S_RUN/runsc/k8s.io" ] && [ -x /usr/bin/runsc ]; then
  for id in $(/usr/bin/runsc --root "$K8S_RUN/runsc/k8s.io" list -q 2>/dev/null); do
    timeout 20 /usr/bin/runsc --root "$K8S_RUN/runsc/k8s.io" delete --force "$id" >/dev/null 2>&1
  done
fi

# Shims of our containerd (they run in their own process groups).
for p in $(pgrep -f "containerd-shim.*-address $K8S_CONTAINERD_SOCK" 2>/dev/null); do
  kill -KILL "$p" 2>/dev/null
done

# Mounts under our dirs (deepest first): pod volumes, sandbox /dev/shm,
# rootfs, and the pods' network namespaces (netns_mounts_under_state_dir).
# shellcheck disable=SC2013 # mount points have no spaces here
for m in $(awk '{print $2}' /proc/self/mounts | grep -E "^($K8S_STATE|$K8S_RUN)(/|$)" | sort -r); do
  umount -l "$m" 2>/dev/null
done

# Any process still in the pods' cgroups (e.g. a container whose shim was
# killed), then the cgroups themselves (cgroupfs driver), deepest first.
for _ in 1 2 3; do
  pids=$(find /sys/fs/cgroup/*"$K8S_CGROUP_ROOT" /sys/fs/cgroup"$K8S_CGROUP_ROOT" -name cgroup.procs \
    -exec cat {} + 2>/dev/null | sort -u)
  [ -n "$pids" ] || break
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL $pids 2>/dev/null
  sleep 0.5
done
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

# The repo's kubeconfig only if it is this cluster's (same credentials).
if cmp -s "$repo/.k8s/kubeconfig" "$K8S_ADMIN_KUBECONFIG"; then
  rm -f "$repo/.k8s/kubeconfig"
  rmdir "$repo/.k8s" 2>/dev/null
fi
rm -rf "$K8S_STATE" "$K8S_RUN"
k8s_log "down (build cache kept in $K8S_CACHE)"
