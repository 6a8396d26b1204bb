#!/usr/bin/env bash
# After make test: no agentbox pod or NetworkPolicy may be left in the local
# cluster (labelled agentbox.session, any namespace). Pods deleted at the
# end of a test may still be terminating: wait for them up to 60 s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/env.sh"
left=""
for _ in $(seq 1 60); do
  left="$(k8s_kubectl get pods,networkpolicies -A -l agentbox.session -o name 2>&1)" || {
    echo "FAIL: cannot list agentbox pods in the local cluster: $left"; exit 1; }
  [ -z "$left" ] && { echo "no agentbox pods left behind in the cluster"; exit 0; }
  sleep 1
done
echo "FAIL: agentbox pods or network policies left behind in the cluster:"
echo "$left"
exit 1
