#!/usr/bin/env bash
# Builds the cluster's binaries from the Go module proxy, once per version:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
# (k8s.io/kubernetes) and etcd (a tiny main around go.etcd.io/etcd's embed
# package), in ONE `go build` so the packages they share compile once.
# The build module lives in the cache dir, never in the repo's go.mod:
# k8s.io/kubernetes lists its staging modules (k8s.io/api, ...) as v0.0.0
# replaced by ./staging, so the generated go.mod replaces each of them by
# its published v0.<minor>.<patch> release.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
export PATH="/usr/local/go/bin:$PATH"

BINS="etcd pause kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
done_marker="$K8S_BIN/.complete"
# The build is keyed by the versions and by this script (what it builds).
key="$K8S_VERSION $ETCD_VERSION $(cat "$here/build.sh" "$here/pause-image.sh" | sha256sum | cut -c1-16)"
if [ -f "$done_marker" ] && [ "$(cat "$done_marker")" = "$key" ]; then
  exit 0
fi

src="$K8S_CACHE/src"
mkdir -p "$src/etcd" "$src/pause" "$K8S_BIN"
cd "$src"
start=$(date +%s)
k8s_log "building Kubernetes $K8S_VERSION and etcd $ETCD_VERSION into $K8S_BIN (once; ~10 min on 2 cores)"

staging="v0.${K8S_VERSION#v1.}"
gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -n "$gomod" ] || { k8s_log "could not download k8s.io/kubernetes@$K8S_VERSION from the Go module proxy"; exit 1; }
{
  echo "module agentbox.local/k8sbuild"
  echo
  echo "go $(sed -n 's/^go //p' "$gomod")"
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $K8S_VERSION"
  echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  echo ")"
  echo
  echo "replace ("
  sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
  echo ")"
  echo
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    echo "tool k8s.io/kubernetes/cmd/$c"
  done
} > go.mod
cat > etcd/main.go <<'GO'
// Command etcd is a single-member etcd server for the local cluster, built
// from go.etcd.io/etcd/server/v3/embed. It serves clients over TLS with
// client-certificate authentication on the given loopback URL (and its
// unused peer URL likewise).
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("data-dir", "", "data directory")
	client := flag.String("client-url", "https://127.0.0.1:2379", "client URL (loopback)")
	peer := flag.String("peer-url", "https://127.0.0.1:2380", "peer URL (loopback, single member)")
	cert := flag.String("cert", "", "serving certificate")
	key := flag.String("key", "", "serving key")
	ca := flag.String("ca", "", "CA that client certificates must chain to")
	flag.Parse()

	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("etcd: -client-url: %v", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("etcd: -peer-url: %v", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "agentbox"
	cfg.Dir = *dir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo.CertFile = *cert
	cfg.ClientTLSInfo.KeyFile = *key
	cfg.ClientTLSInfo.TrustedCAFile = *ca
	cfg.ClientTLSInfo.ClientCertAuth = true
	cfg.PeerTLSInfo = cfg.ClientTLSInfo
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: start: %v", err)
	}
	<-e.Server.ReadyNotify()
	log.Printf("etcd: ready, serving %s", *client)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Printf("etcd: %v", err)
	}
	e.Close()
}
GO

cat > pause/main.go <<'GO'
// Command pause is the pod sandbox's process: it holds the pod's
// namespaces, reaps orphaned children and exits on SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
GO

export GOFLAGS=-mod=mod CGO_ENABLED=0
go mod tidy
pkg=k8s.io/component-base/version
ver=${K8S_VERSION#v}
ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=${ver%%.*}"
ldflags="$ldflags -X $pkg.gitMinor=$(echo "$ver" | cut -d. -f2) -X $pkg.gitTreeState=clean"
ldflags="$ldflags -X $pkg.buildDate=1970-01-01T00:00:00Z"
pkgs="./etcd ./pause"
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  pkgs="$pkgs k8s.io/kubernetes/cmd/$c"
done
# shellcheck disable=SC2086
go build -trimpath -ldflags "$ldflags" -o "$K8S_BIN/" $pkgs
for b in $BINS; do [ -x "$K8S_BIN/$b" ] || { k8s_log "build produced no $b"; exit 1; }; done
"$here/pause-image.sh" "$K8S_BIN/pause" "$K8S_CACHE/pause.tar"
echo "$key" > "$done_marker"
k8s_log "built in $(( $(date +%s) - start ))s: $BINS"
