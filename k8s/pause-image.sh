#!/usr/bin/env bash
# pause-image.sh PAUSE_BINARY OUT.tar: writes an OCI image archive holding
# only the pause binary, named $K8S_PAUSE_IMAGE, for the CRI's pod sandboxes
# (no registry can be reached, so registry.k8s.io/pause is not an option).
set -euo pipefail
. "$(dirname "$0")/env.sh"
bin=$1 out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/oci/blobs/sha256"
install -m 0755 "$bin" "$work/root/pause"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/root" -cf "$work/layer.tar" pause

# blob FILE: stores FILE as a blob, prints "sha256:<hex> <size>".
blob() {
  local d
  d=$(sha256sum "$1" | cut -d' ' -f1)
  cp "$1" "$work/oci/blobs/sha256/$d"
  echo "sha256:$d $(stat -c %s "$1")"
}
read -r layer_digest layer_size < <(blob "$work/layer.tar")
printf '{"architecture":"%s","os":"linux","config":{"User":"65535:65535","Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
  "$(go env GOARCH 2>/dev/null || echo amd64)" "$layer_digest" > "$work/config.json"
read -r config_digest config_size < <(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%s}]}' \
  "$config_digest" "$config_size" "$layer_digest" "$layer_size" > "$work/manifest.json"
read -r manifest_digest manifest_size < <(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest_digest" "$manifest_size" "$K8S_PAUSE_IMAGE" "${K8S_PAUSE_IMAGE##*:}" > "$work/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' > "$work/oci/oci-layout"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/oci" -cf "$out.tmp" .
mv "$out.tmp" "$out"
