#!/usr/bin/env bash
# Smoke test of the running local cluster (`make k8s-up` first): a
# hardened pod from agentbox/base:latest in namespace agentbox running `cat`
# with stdin open; checks an echo round trip over ATTACH (what the backend
# runs its protocol over), that the pod has only the `lo` interface, and
# the hardening (uid 1000, read-only root, no capabilities, no_new_privs,
# seccomp); then deletes the pod. Prints "N passed, N failed".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
repo=$(cd "$here/.." && pwd)
export KUBECONFIG="${KUBECONFIG:-$repo/.k8s/kubeconfig}"
[ -s "$KUBECONFIG" ] || { k8s_log "no $KUBECONFIG: run \`make k8s-up\` first"; exit 1; }
kubectl() { "$K8S_BIN/kubectl" "$@"; }
IMAGE="${SMOKE_IMAGE:-agentbox/base:latest}"
# SMOKE_RUNTIME_CLASS=gvisor runs the pod under gVisor (RuntimeClass gvisor).
RC="${SMOKE_RUNTIME_CLASS:-}"

# The image must be in the cluster's containerd (imported by k8s-up).
if ! k8s_ctr images ls -q | grep -qx "docker.io/$IMAGE"; then
  if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
    k8s_log "building $IMAGE (make image)"
    make -C "$repo" image >/dev/null
  fi
  docker save "$IMAGE" | k8s_ctr images import - >/dev/null
fi

pass=0 failed=0
check() { # check NAME CMD...: runs CMD, counts and reports the result.
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}

pod="smoke${RC:+-$RC}-$(date +%s)-$$"
tmp=$(mktemp -d)
cleanup() {
  kubectl -n agentbox delete pod "$pod" --ignore-not-found --grace-period=1 --wait=false >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/pod.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  namespace: agentbox
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  restartPolicy: Never${RC:+
  runtimeClassName: $RC}
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    runAsGroup: 1000
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: IfNotPresent
    command: ["cat"]
    stdin: true
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
YAML
t0=$(date +%s%3N)
kubectl create -f "$tmp/pod.yaml" >/dev/null
if kubectl -n agentbox wait --for=condition=Ready "pod/$pod" --timeout=120s >/dev/null; then
  echo "pod create -> Ready: $(( $(date +%s%3N) - t0 )) ms"
  pass=$((pass + 1)); echo "ok   pod Running"
else
  failed=$((failed + 1)); echo "FAIL pod Running"
  kubectl -n agentbox describe pod "$pod" | tail -n 20
  echo "0 passed, 1 failed"
  exit 1
fi

# Attach: write a line to cat's stdin, read it back from its stdout.
attach_roundtrip() {
  local nonce="ping-$RANDOM-$RANDOM" line=""
  coproc ATT { kubectl -n agentbox attach -i -q "$pod" -c main 2>"$tmp/attach.err"; }
  echo "$nonce" >&"${ATT[1]}"
  read -r -t 30 line <&"${ATT[0]}" || true
  kill "$ATT_PID" 2>/dev/null || true
  wait "$ATT_PID" 2>/dev/null || true
  [ "$line" = "$nonce" ] || { echo "  attach read '$line', want '$nonce'; stderr: $(cat "$tmp/attach.err")"; return 1; }
}
check "attach echo round trip" attach_roundtrip
check "attach again (a second session)" attach_roundtrip

in_pod() { kubectl -n agentbox exec "$pod" -c main -- "$@"; }
expect() { # expect WANT CMD...: CMD's output must be WANT.
  local want=$1 got
  shift
  got=$("$@" 2>&1) || true
  [ "$got" = "$want" ] || { echo "  got '$got', want '$want'"; return 1; }
}
if [ "$RC" = gvisor ]; then
  # gVisor has no /sys/class/net; its /proc/net/dev lists the interfaces.
  check "only the lo interface" expect lo in_pod sh -c "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
else
  check "only the lo interface" expect lo in_pod ls /sys/class/net
fi
check "uid 1000" expect "1000" in_pod id -u
check "read-only root filesystem" expect "ro" in_pod sh -c 'touch /x 2>/dev/null && echo rw || echo ro'
check "no capabilities" expect "CapEff:	0000000000000000" in_pod grep CapEff /proc/self/status
if [ "$RC" != gvisor ]; then # gVisor's /proc/self/status shows neither
  check "no_new_privs" expect "NoNewPrivs:	1" in_pod grep NoNewPrivs /proc/self/status
  check "seccomp filter" expect "Seccomp:	2" in_pod grep '^Seccomp:' /proc/self/status
fi
check "no service-account token" expect "absent" in_pod sh -c 'test -e /var/run/secrets/kubernetes.io && echo present || echo absent'

deleted() { kubectl -n agentbox delete pod "$pod" --grace-period=1 --timeout=60s >/dev/null; }
check "pod deleted" deleted
echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
