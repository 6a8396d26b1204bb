# shellcheck shell=bash disable=SC2034
# Shared settings of the local Kubernetes cluster (sourced by up.sh,
# down.sh, build.sh, smoke.sh). Every value can be overridden from the
# environment.
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
# etcd server: the version k8s.io/kubernetes itself pins (its integration
# tests run against it), so one module graph builds everything.
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
K8S_CACHE="${K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbox/k8s/$K8S_VERSION}"
K8S_BIN="$K8S_CACHE/bin"
K8S_STATE="${K8S_STATE:-/var/lib/agentbox-k8s}"
K8S_RUN="${K8S_RUN:-/run/agentbox-k8s}"
# The node's name is its address: the kubelet refuses a loopback --node-ip
# but takes an IP given as the hostname override as the node's InternalIP,
# which is what the apiserver dials for logs/exec/attach (127.0.0.1 only).
K8S_NODE="${K8S_NODE:-127.0.0.1}"
K8S_ETCD_PORT="${K8S_ETCD_PORT:-23790}"
K8S_ETCD_PEER_PORT="${K8S_ETCD_PEER_PORT:-23800}"
K8S_API_PORT="${K8S_API_PORT:-16443}"
K8S_KUBELET_PORT="${K8S_KUBELET_PORT:-10650}"
K8S_KUBELET_HEALTHZ_PORT="${K8S_KUBELET_HEALTHZ_PORT:-10648}"
K8S_SCHEDULER_PORT="${K8S_SCHEDULER_PORT:-10659}"
K8S_CONTROLLER_MANAGER_PORT="${K8S_CONTROLLER_MANAGER_PORT:-10657}"
K8S_CONTAINERD_SOCK="$K8S_RUN/containerd.sock"
K8S_IMAGES="${K8S_IMAGES:-agentbox/k8s:latest agentbox/base:latest}"
K8S_SERVICE_CIDR="${K8S_SERVICE_CIDR:-10.254.0.0/24}"
# The kubelet's pods live under this cgroup (in every cgroup v1 hierarchy),
# apart from Docker's and anything else on the host.
K8S_CGROUP_ROOT="${K8S_CGROUP_ROOT:-/agentbox-k8s}"

K8S_LOGS="$K8S_STATE/logs"
K8S_PKI="$K8S_STATE/pki"
K8S_ADMIN_KUBECONFIG="$K8S_STATE/kubeconfig/admin"
# Start order; down.sh stops them in reverse.
K8S_COMPONENTS="containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet"

k8s_log() { echo "k8s: $*"; }

# k8s_pid NAME: the pid of a running component started by up.sh, or fails.
k8s_pid() {
  local pid
  pid=$(cat "$K8S_RUN/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # The pid may have been reused: it must still run our binary.
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$1" || return 1
  echo "$pid"
}

# k8s_stop NAME: SIGTERM to the component's process group, SIGKILL after 10s.
k8s_stop() {
  local pid
  pid=$(k8s_pid "$1") || { rm -f "$K8S_RUN/$1.pid"; return 0; }
  k8s_log "stopping $1 (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$K8S_RUN/$1.pid"
  return 0
}

k8s_ctr() { ctr --address "$K8S_CONTAINERD_SOCK" -n k8s.io "$@"; }
k8s_kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$K8S_ADMIN_KUBECONFIG" "$@"; }
K8S_PAUSE_IMAGE="${K8S_PAUSE_IMAGE:-agentbox.local/pause:1}"
