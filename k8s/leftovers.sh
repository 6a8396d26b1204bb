#!/usr/bin/env bash
# After make test: no agentbox pod or NetworkPolicy (labelled
# agentbox.session) and no ConfigMap agentbox made (a warm pool's owner,
# labelled app.kubernetes.io/managed-by=agentbox) may be left in the local
# cluster, in any namespace. Objects deleted at the end of a test may still
# be terminating: wait for them up to 60 s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/env.sh"
left=""
for _ in $(seq 1 60); do
  left="$(k8s_kubectl get pods,networkpolicies -A -l agentbox.session -o name 2>&1)" || {
    echo "FAIL: cannot list agentbox pods in the local cluster: $left"; exit 1; }
  cms="$(k8s_kubectl get configmaps -A -l app.kubernetes.io/managed-by=agentbox -o name 2>&1)" || {
    echo "FAIL: cannot list agentbox ConfigMaps in the local cluster: $cms"; exit 1; }
  left="$left${left:+${cms:+$'\n'}}$cms"
  [ -z "$left" ] && { echo "no agentbox pods, network policies or ConfigMaps left behind in the cluster"; exit 0; }
  sleep 1
done
echo "FAIL: agentbox pods, network policies or ConfigMaps left behind in the cluster:"
echo "$left"
exit 1
