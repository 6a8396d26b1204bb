package sandbox

import (
	"context"
	"net"
)

// Egress is the host side of `network: proxy`: the backend hands it each
// connection a program in the sandbox makes to the in-container forwarder,
// together with the session's id (for the audit log). ServeEgress owns c,
// closes it, and returns when the attempt has ended or ctx has.
// agent.NewEgress wraps package netproxy in it.
type Egress interface {
	ServeEgress(ctx context.Context, session string, c net.Conn)
}

// ProxySocket is where a backend mounts the unix socket of the host-side
// proxy inside a `network: proxy` sandbox; the executor's forwarder
// carries each connection to it.
const ProxySocket = "/run/agentbox/proxy.sock"

// ProxyListenAddr is where the in-container forwarder of `network: proxy`
// listens. The container has no interface but lo, so programs reach the
// host-side proxy only through it.
const ProxyListenAddr = "127.0.0.1:3128"

// ProxyEnv is the environment that points programs in the sandbox at the
// forwarder (curl, pip, npm, git, Python's urllib and Go's net/http read
// these). NO_PROXY keeps only the container's own loopback direct: it is
// inside the sandbox, and the host-side proxy would resolve "localhost" on
// the host.
func ProxyEnv() map[string]string {
	u := "http://" + ProxyListenAddr
	noProxy := "localhost,127.0.0.1,::1"
	return map[string]string{
		"HTTP_PROXY": u, "HTTPS_PROXY": u, "http_proxy": u, "https_proxy": u,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
	}
}

// CABundlePath is where a backend mounts, read-only, the CA bundle of a
// session whose proxy intercepts TLS: the image's system bundle followed
// by the session CA (Config.TrustPEM).
const CABundlePath = "/run/agentbox/ca-bundle.pem"

// TrustPEMEnv carries the session CA (PEM, a public certificate, never its
// key) to `agentbox executor --ca-bundle`, which writes the bundle at
// CABundlePath (the kubernetes backend's init container: a pod has no host
// file to mount).
const TrustPEMEnv = "AGENTBOX_TRUST_PEM"

// TrustEnv points the usual clients (OpenSSL and curl, Python requests,
// Node, git, pip) at the session's CA bundle.
func TrustEnv() map[string]string {
	return map[string]string{
		"SSL_CERT_FILE": CABundlePath, "REQUESTS_CA_BUNDLE": CABundlePath, "NODE_EXTRA_CA_CERTS": CABundlePath,
		"GIT_SSL_CAINFO": CABundlePath, "CURL_CA_BUNDLE": CABundlePath, "PIP_CERT": CABundlePath,
	}
}

// SystemBundles are the paths images keep their trusted roots at, the
// first found is used.
var SystemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/cert.pem",                  // Alpine, macOS-like layouts
}
