#!/usr/bin/env bash
# Starts the local single-node Kubernetes cluster on loopback (see
# k8s/README.md): installs containerd/runc/CNI plugins from apt when missing,
# builds the binaries once (build.sh), makes certificates (certs.sh) and
# configs (config.sh), starts every component in its own process group,
# waits for the node to be Ready, creates namespace agentbox, imports
# $K8S_IMAGES from the local Docker engine and writes <repo>/.k8s/kubeconfig.
# Idempotent: on a running cluster it only re-imports the images.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
repo=$(cd "$here/.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
t0=$(date +%s)

[ "$(id -u)" = 0 ] || { k8s_log "must run as root (it runs containerd and the kubelet)"; exit 1; }

# fail COMPONENT MESSAGE: prints the tail of the component's log and a hint.
fail() {
  local c=$1 msg=$2
  k8s_log "FAILED: $c: $msg"
  if [ -s "$K8S_LOGS/$c.log" ]; then
    echo "---- last 30 lines of $K8S_LOGS/$c.log"
    tail -n 30 "$K8S_LOGS/$c.log"
    echo "----"
  else
    k8s_log "$K8S_LOGS/$c.log is empty; pid file: $(cat "$K8S_RUN/$c.pid" 2>/dev/null || echo none)"
  fi
  case $c in
  containerd) k8s_log "hint: is /usr/bin/containerd >= 1.6 and $K8S_RUN free? \`make k8s-down\` then retry" ;;
  etcd) k8s_log "hint: is 127.0.0.1:$K8S_ETCD_PORT or :$K8S_ETCD_PEER_PORT taken (ss -ltnp)? set K8S_ETCD_PORT" ;;
  kube-apiserver) k8s_log "hint: is 127.0.0.1:$K8S_API_PORT taken (ss -ltnp)? set K8S_API_PORT; or \`make k8s-down\` for fresh certs" ;;
  kubelet) k8s_log "hint: see the log above; \`make k8s-down && make k8s-up\` starts from a clean state" ;;
  *) k8s_log "hint: \`make k8s-down && make k8s-up\` starts from a clean state" ;;
  esac
  exit 1
}

# start NAME CMD...: runs CMD in a new session (its own process group),
# logging to $K8S_LOGS/NAME.log, unless NAME already runs.
start() {
  local name=$1
  shift
  k8s_pid "$name" >/dev/null && return 0
  k8s_log "starting $name"
  setsid "$@" >>"$K8S_LOGS/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$K8S_RUN/$name.pid"
  # Until the forked shell has exec'd the component, its command line is
  # still this script's, and k8s_pid (which checks the name, against a
  # reused pid) would call it exited: on a loaded host that window failed
  # a CI run ("kubelet: exited", empty log). Wait for the exec, or its end.
  for _ in $(seq 1 100); do
    k8s_pid "$name" >/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

# wait_for NAME SECONDS CMD...: polls CMD until it succeeds; fails early if
# the component died.
wait_for() {
  local name=$1 secs=$2 deadline
  shift 2
  deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    k8s_pid "$name" >/dev/null || fail "$name" "exited"
    [ "$(date +%s)" -lt "$deadline" ] || fail "$name" "not ready after ${secs}s"
    sleep 0.5
  done
}

# node_ready: Ready, untainted, and (when this run started the kubelet)
# reported so by that kubelet, not a stale status from an earlier one.
kubelet_started=""
node_ready() {
  local ready
  ready=$(k8s_kubectl get node "$K8S_NODE" -o 'jsonpath={range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}')
  [ "${ready%% *}" = True ] && [[ ! "${ready#* }" < "$kubelet_started" ]] &&
    [ -z "$(k8s_kubectl get node "$K8S_NODE" -o 'jsonpath={.spec.taints}')" ]
}

# 1. Packages.
need=""
command -v containerd >/dev/null || need="$need containerd"
command -v runc >/dev/null || need="$need runc"
[ -x "${K8S_CNI_DIR:-/usr/lib/cni}/loopback" ] || need="$need containernetworking-plugins"
command -v openssl >/dev/null || need="$need openssl"
command -v curl >/dev/null || need="$need curl"
if [ -n "$need" ]; then
  k8s_log "installing$need"
  apt-get update -qq
  # shellcheck disable=SC2086 # one package per word
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi

# 2. Binaries (cached), certificates, configs. State left by a cluster whose
#    processes were all killed (a stopped session, a reboot) is cleared
#    first, so that it starts as new rather than from stale mounts and pods.
"$here/build.sh" || {
  k8s_log "FAILED: building Kubernetes $K8S_VERSION (output above)"
  k8s_log "hint: the Go module proxy must be reachable; \`go version\` must be >= the go line of k8s.io/kubernetes@$K8S_VERSION's go.mod"
  exit 1
}
if [ -d "$K8S_STATE" ] && ! k8s_pid containerd >/dev/null && ! k8s_pid etcd >/dev/null &&
   ! k8s_pid kube-apiserver >/dev/null && ! k8s_pid kubelet >/dev/null; then
  k8s_log "clearing the state of a cluster that no longer runs"
  "$here/down.sh" >/dev/null
fi
mkdir -p "$K8S_STATE" "$K8S_RUN" "$K8S_LOGS"
chmod 700 "$K8S_STATE" "$K8S_RUN"
"$here/certs.sh"
rm -f "$K8S_STATE/changed"
"$here/config.sh"
# A component that runs with a config that just changed is restarted (its
# containers keep running: their shims outlive containerd).
restart_if_changed() {
  grep -qx "$2" "$K8S_STATE/changed" 2>/dev/null && k8s_pid "$1" >/dev/null || return 0
  k8s_log "restarting $1: $2 changed"
  k8s_stop "$1"
}
restart_if_changed containerd "$K8S_STATE/containerd.toml"
restart_if_changed kubelet "$K8S_STATE/kubelet.yaml"

# 3. containerd, and the pause image the CRI needs for pod sandboxes.
start containerd containerd --config "$K8S_STATE/containerd.toml"
wait_for containerd 30 ctr --address "$K8S_CONTAINERD_SOCK" version
if ! k8s_ctr images ls -q | grep -qx "$K8S_PAUSE_IMAGE"; then
  k8s_ctr images import "$K8S_CACHE/pause.tar" >/dev/null || fail containerd "importing the pause image"
fi

# 4. etcd, then the control plane.
P=$K8S_PKI
start etcd "$K8S_BIN/etcd" -data-dir "$K8S_STATE/etcd" \
  -client-url "https://127.0.0.1:$K8S_ETCD_PORT" -peer-url "https://127.0.0.1:$K8S_ETCD_PEER_PORT" \
  -cert "$P/etcd.crt" -key "$P/etcd.key" -ca "$P/ca.crt"
wait_for etcd 60 curl -sf --cacert "$P/ca.crt" --cert "$P/apiserver-etcd-client.crt" \
  --key "$P/apiserver-etcd-client.key" "https://127.0.0.1:$K8S_ETCD_PORT/health"

start kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers="https://127.0.0.1:$K8S_ETCD_PORT" --etcd-cafile="$P/ca.crt" \
  --etcd-certfile="$P/apiserver-etcd-client.crt" --etcd-keyfile="$P/apiserver-etcd-client.key" \
  --bind-address=127.0.0.1 --secure-port="$K8S_API_PORT" --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --anonymous-auth=false \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=false --profiling=false \
  --service-account-issuer="https://127.0.0.1:$K8S_API_PORT" \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range="$K8S_SERVICE_CIDR" \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$P/ca.crt" --kubelet-preferred-address-types=InternalIP
wait_for kube-apiserver 120 curl -sf --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" \
  "https://127.0.0.1:$K8S_API_PORT/readyz"
# The apiserver reaches kubelets (logs, exec, attach) as this user.
k8s_kubectl get clusterrolebinding agentbox:apiserver-kubelet-client >/dev/null 2>&1 ||
  k8s_kubectl create clusterrolebinding agentbox:apiserver-kubelet-client \
    --clusterrole=system:kubelet-api-admin --user=kube-apiserver-kubelet-client >/dev/null

KC=$K8S_STATE/kubeconfig
start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
  --kubeconfig="$KC/controller-manager" --authentication-kubeconfig="$KC/controller-manager" \
  --authorization-kubeconfig="$KC/controller-manager" --authentication-skip-lookup=true \
  --bind-address=127.0.0.1 --secure-port="$K8S_CONTROLLER_MANAGER_PORT" --leader-elect=false \
  --use-service-account-credentials=true --service-account-private-key-file="$P/sa.key" \
  --root-ca-file="$P/ca.crt" --cluster-name=agentbox --profiling=false
start kube-scheduler "$K8S_BIN/kube-scheduler" \
  --kubeconfig="$KC/scheduler" --authentication-kubeconfig="$KC/scheduler" \
  --authorization-kubeconfig="$KC/scheduler" --authentication-skip-lookup=true \
  --bind-address=127.0.0.1 --secure-port="$K8S_SCHEDULER_PORT" --leader-elect=false --profiling=false

# 5. The kubelet. It sets some kernel tunables when it starts
#    (kernel.panic_on_oops=1, vm.overcommit_memory=1, ...) before it first
#    reports Ready; the host's own values are put back then (and by down.sh).
tunables="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
if ! k8s_pid kubelet >/dev/null && [ ! -s "$K8S_STATE/sysctl.orig" ]; then
  for t in $tunables; do echo "$t=$(sysctl -n "$t")"; done >"$K8S_STATE/sysctl.orig"
fi
# The pods' cgroup root must exist; a new cgroup v1 cpuset is empty until
# it is given its parent's cpus and mems.
while read -r _ mnt type _; do
  case $type in
  cgroup) mkdir -p "$mnt$K8S_CGROUP_ROOT" ;;
  cgroup2) [ "$mnt" = /sys/fs/cgroup ] && mkdir -p "$mnt$K8S_CGROUP_ROOT" ;;
  *) continue ;;
  esac
  for f in cpuset.cpus cpuset.mems; do
    [ -f "$mnt$K8S_CGROUP_ROOT/$f" ] && [ -z "$(cat "$mnt$K8S_CGROUP_ROOT/$f")" ] &&
      cat "$mnt/$f" >"$mnt$K8S_CGROUP_ROOT/$f"
  done
done </proc/self/mounts
k8s_pid kubelet >/dev/null || kubelet_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start kubelet "$K8S_BIN/kubelet" --config="$K8S_STATE/kubelet.yaml" \
  --kubeconfig="$KC/kubelet" --hostname-override="$K8S_NODE" --root-dir="$K8S_STATE/kubelet" --v=1
wait_for kubelet 180 node_ready
if [ -s "$K8S_STATE/sysctl.orig" ]; then
  while IFS= read -r kv; do sysctl -q -w "$kv" || true; done <"$K8S_STATE/sysctl.orig"
fi
k8s_log "node $K8S_NODE Ready after $(( $(date +%s) - t0 ))s"

# 6. Namespace agentbox: Pod Security "restricted" enforced.
k8s_kubectl get namespace agentbox >/dev/null 2>&1 || k8s_kubectl create namespace agentbox >/dev/null
k8s_kubectl label --overwrite namespace agentbox \
  pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted >/dev/null
wait_for kube-controller-manager 60 k8s_kubectl -n agentbox get serviceaccount default
if grep -q 'runtimes.runsc' "$K8S_STATE/containerd.toml"; then
  printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: gvisor\nhandler: runsc\n' |
    k8s_kubectl apply -f - >/dev/null
fi

# 7. Images from the local Docker engine (no registry), on every run, so
#    `make k8s-up` after `make image` refreshes them; one whose Docker image
#    id was imported already (and is still there) is skipped.
ti=$(date +%s)
mkdir -p "$K8S_STATE/images"
for img in $K8S_IMAGES; do
  id=$(docker image inspect --format '{{.Id}}' "$img" 2>/dev/null) || {
    k8s_log "image $img: not in the Docker engine, skipped"
    continue
  }
  ref=$img
  case ${img%%/*} in *.*|*:*|localhost) ;; *) ref="docker.io/$img" ;; esac
  case ${img##*/} in *:*) ;; *) ref="$ref:latest" ;; esac
  rec="$K8S_STATE/images/$(echo "$ref" | tr '/:' '__')"
  if [ "$(cat "$rec" 2>/dev/null)" = "$id" ] && k8s_ctr images ls -q | grep -qxF "$ref"; then
    k8s_log "image $img: up to date"
    continue
  fi
  docker save "$img" | k8s_ctr images import - >/dev/null ||
    fail containerd "importing image $img (docker save | ctr images import)"
  echo "$id" >"$rec"
  k8s_log "image $img imported as $ref"
done
k8s_log "images done in $(( $(date +%s) - ti ))s"

# 8. The kubeconfig for clients (certificates embedded; admin).
mkdir -p "$repo/.k8s"
install -m 0600 "$K8S_ADMIN_KUBECONFIG" "$repo/.k8s/kubeconfig.tmp"
mv "$repo/.k8s/kubeconfig.tmp" "$repo/.k8s/kubeconfig"
k8s_log "up in $(( $(date +%s) - t0 ))s: KUBECONFIG=$repo/.k8s/kubeconfig (namespace agentbox)"
