#!/usr/bin/env bash
# Writes the cluster's configuration under $K8S_STATE: the private
# containerd's config (CRI plugin, runc with cgroupfs, no registry), the
# loopback-only CNI setup and the kubelet's KubeletConfiguration.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"

# put FILE: writes stdin to FILE atomically and only when it changed, so a
# running containerd (which watches the CNI dir) never reads half a file.
put() {
  local tmp="$1.tmp.$$"
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1" && echo "$1" >>"$K8S_STATE/changed"; fi
}

mkdir -p "$K8S_STATE/bin" "$K8S_STATE/cni/bin" "$K8S_STATE/cni/net.d" "$K8S_STATE/kubelet" "$K8S_LOGS"

# CNI: only the loopback plugin (the CRI's own lo network) and agentbox-noip,
# which creates nothing (see k8s/cni-noip): pods have `lo` and no route out.
ln -sf "${K8S_CNI_DIR:-/usr/lib/cni}/loopback" "$K8S_STATE/cni/bin/loopback"
install -m 0755 "$here/cni-noip" "$K8S_STATE/cni/bin/agentbox-noip"
put "$K8S_STATE/cni/net.d/10-agentbox-noip.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "agentbox-noip", "plugins": [{"type": "agentbox-noip"}]}
JSON

# gVisor as a second runtime handler when runsc is installed.
runsc_runtime=""
if [ -x /usr/bin/runsc ]; then
  install -m 0755 "$here/runsc-wrapper" "$K8S_STATE/bin/runsc"
  runsc_runtime="
    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc]
      runtime_type = \"io.containerd.runc.v2\"
      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc.options]
        BinaryName = \"$K8S_STATE/bin/runsc\"
        Root = \"$K8S_RUN/runsc\"
        SystemdCgroup = false"
fi

# A containerd of its own: own root, state, socket; never Docker's.
put "$K8S_STATE/containerd.toml" <<TOML
version = 2
root = "$K8S_STATE/containerd"
state = "$K8S_RUN/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$K8S_CONTAINERD_SOCK"
[ttrpc]
  address = "$K8S_CONTAINERD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$K8S_PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  netns_mounts_under_state_dir = true
  # Root here lacks CAP_SYS_RESOURCE: no oom_score_adj below containerd's own.
  restrict_oom_score_adj = true
  tolerate_missing_hugetlb_controller = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$K8S_RUN/runc"$runsc_runtime
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$K8S_STATE/cni/bin"
    conf_dir = "$K8S_STATE/cni/net.d"
    max_conf_num = 1
TOML

put "$K8S_STATE/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $K8S_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $K8S_KUBELET_HEALTHZ_PORT
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $K8S_PKI/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $K8S_PKI/kubelet-serving.crt
tlsPrivateKeyFile: $K8S_PKI/kubelet-serving.key
containerRuntimeEndpoint: unix://$K8S_CONTAINERD_SOCK
cgroupDriver: cgroupfs
cgroupRoot: $K8S_CGROUP_ROOT
# No host firewall changes (KUBE-FIREWALL is for kube-proxy's route_localnet).
makeIPTablesUtilChains: false
# cgroup v1 support is deprecated upstream and refused by default.
failCgroupV1: false
failSwapOn: false
# Every container gets the runtime's default seccomp profile unless its
# pod asks for another one.
seccompDefault: true
podLogsDir: $K8S_STATE/pod-logs
volumePluginDir: $K8S_STATE/kubelet/volume-plugins
resolvConf: /etc/resolv.conf
# Imported images cannot be pulled again: never garbage-collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
serializeImagePulls: false
registerNode: true
rotateCertificates: false
serverTLSBootstrap: false
maxPods: 110
podPidsLimit: 4096
YAML
