#!/usr/bin/env bash
# Makes the cluster's PKI with openssl under $K8S_STATE/pki, once (kept
# until `make k8s-down`): one CA, serving certificates for etcd, the
# apiserver and the kubelet (127.0.0.1/localhost only), client certificates
# for every component, and the service-account signing key. Then the
# components' kubeconfigs under $K8S_STATE/kubeconfig.
set -euo pipefail
. "$(dirname "$0")/env.sh"

pki="$K8S_STATE/pki"
kc="$K8S_STATE/kubeconfig"
mkdir -p "$pki" "$kc"
chmod 700 "$K8S_STATE" "$pki"
cd "$pki"
days=365

# mkcert NAME SUBJECT USAGE [SAN]: USAGE is serverAuth, clientAuth or both.
mkcert() {
  local name=$1 subj=$2 usage=$3 san=${4:-}
  [ -s "$name.crt" ] && return 0
  openssl ecparam -name prime256v1 -genkey -noout -out "$name.key" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } > "$name.ext"
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
    -days "$days" -sha256 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

if [ ! -s ca.crt ]; then
  openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
  openssl req -x509 -new -key ca.key -subj "/CN=agentbox-k8s-ca" -days "$days" -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.crt 2>/dev/null
fi
loop="IP:127.0.0.1,DNS:localhost"
svc_ip="${K8S_SERVICE_CIDR%.*/*}.1"
mkcert etcd "/CN=etcd" "serverAuth,clientAuth" "$loop"
mkcert apiserver-etcd-client "/CN=kube-apiserver-etcd-client" clientAuth
mkcert apiserver "/CN=kube-apiserver" serverAuth \
  "$loop,IP:$svc_ip,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
mkcert apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client" clientAuth
mkcert admin "/O=system:masters/CN=agentbox-admin" clientAuth
mkcert kubelet "/O=system:nodes/CN=system:node:$K8S_NODE" clientAuth
mkcert kubelet-serving "/O=system:nodes/CN=system:node:$K8S_NODE" serverAuth "$loop"
mkcert scheduler "/CN=system:kube-scheduler" clientAuth
mkcert controller-manager "/CN=system:kube-controller-manager" clientAuth
if [ ! -s sa.key ]; then
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
fi
chmod 600 ./*.key

# kubeconfig FILE CERTNAME: a kubeconfig with the certificates embedded.
kubeconfig() {
  local file=$1 name=$2
  cat > "$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: agentbox
  cluster:
    server: https://127.0.0.1:$K8S_API_PORT
    certificate-authority-data: $(base64 -w0 ca.crt)
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 "$name.crt")
    client-key-data: $(base64 -w0 "$name.key")
contexts:
- name: agentbox
  context:
    cluster: agentbox
    user: $name
    namespace: agentbox
current-context: agentbox
KC
  chmod 600 "$file"
}
for n in admin kubelet scheduler controller-manager; do kubeconfig "$kc/$n" "$n"; done
