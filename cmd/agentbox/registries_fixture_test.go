package main_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The registries the package-manager tests serve themselves, on one of the
// host's non-loopback addresses: clients never send a loopback address
// through a proxy (Go's net/http does not, whatever NO_PROXY says), and the
// sandbox's own loopback is not the host's. The sandbox has no interface
// but lo, so only the host-side proxy can reach them, and only because the
// policy names the address by an IP rule.

// Fixture packages, one per package manager.
const (
	wheelName   = "hello-wheel" // PEP 503 name
	wheelModule = "hello_wheel"
	npmName     = "hello-npm"
	goModule    = "example.com/hello"
	fixtureVer  = "1.0.0"
)

// registry is a PEP 503 simple index, an npm registry and a GOPROXY on one
// listener; hits records every path asked for.
type registry struct {
	addr string // host:port
	mu   sync.Mutex
	hits []string
}

// hostAddress is a non-loopback IPv4 address of this host to listen on;
// the test skips when the host has none.
func hostAddress(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	t.Skip("this host has no non-loopback IPv4 address to serve the test registries on")
	return ""
}

// serveRegistry starts the registries; blocked is a host the documents
// point one package at (a host the policy does not allow).
func serveRegistry(t *testing.T, blocked string) *registry {
	t.Helper()
	ln, err := net.Listen("tcp", hostAddress(t)+":0")
	if err != nil {
		t.Fatal(err)
	}
	r := &registry{addr: ln.Addr().String()}
	files := r.files(blocked)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.hits = append(r.hits, req.URL.Path)
		r.mu.Unlock()
		f, ok := files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", f.ctype)
		_, _ = w.Write(f.body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// asked reports whether path was requested.
func (r *registry) asked(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.hits {
		if h == path {
			return true
		}
	}
	return false
}

type served struct {
	ctype string
	body  []byte
}

func (r *registry) files(blocked string) map[string]served {
	base := "http://" + r.addr
	out := map[string]served{}
	// PEP 503: /simple/NAME/ lists the files with their sha256.
	whl := wheel()
	whlName := wheelModule + "-" + fixtureVer + "-py3-none-any.whl"
	out["/files/"+whlName] = served{"application/octet-stream", whl}
	page := func(href string) []byte {
		return []byte(fmt.Sprintf("<!DOCTYPE html>\n<html><body>\n<a href=\"%s#sha256=%s\">%s</a>\n</body></html>\n", href, sha256Hex(whl), whlName))
	}
	out["/simple/"+wheelName+"/"] = served{"text/html", page(base + "/files/" + whlName)}
	// A second index whose file of the same wheel is on the blocked host.
	out["/blocked/simple/"+wheelName+"/"] = served{"text/html", page("http://" + blocked + "/files/" + whlName)}
	// npm: the package document names the tarball and its integrity.
	tgz := npmTarball(npmName)
	out["/"+npmName+"/-/"+npmName+"-"+fixtureVer+".tgz"] = served{"application/octet-stream", tgz}
	out["/"+npmName] = served{"application/json", npmDocument(npmName, base, tgz)}
	blockedTgz := npmTarball("blocked-npm")
	out["/blocked-npm"] = served{"application/json", npmDocument("blocked-npm", "http://"+blocked, blockedTgz)}
	// GOPROXY: list, .info, .mod and .zip of one version.
	gp := "/" + goModule + "/@v/"
	out[gp+"list"] = served{"text/plain", []byte("v" + fixtureVer + "\n")}
	out[gp+"v"+fixtureVer+".info"] = served{"application/json", []byte(`{"Version":"v` + fixtureVer + `","Time":"2026-01-01T00:00:00Z"}`)}
	out[gp+"v"+fixtureVer+".mod"] = served{"text/plain", []byte("module " + goModule + "\n\ngo 1.19\n")}
	out[gp+"v"+fixtureVer+".zip"] = served{"application/zip", goZip()}
	return out
}

// wheel is a pure-python wheel of hello_wheel: the module, and the
// dist-info's METADATA, WHEEL and RECORD (each file's urlsafe sha256).
func wheel() []byte {
	distInfo := wheelModule + "-" + fixtureVer + ".dist-info/"
	files := [][2]string{
		{wheelModule + "/__init__.py", "def greet():\n    return \"hello from the wheel\"\n"},
		{distInfo + "METADATA", "Metadata-Version: 2.1\nName: " + wheelName + "\nVersion: " + fixtureVer + "\nSummary: agentbox test fixture\n"},
		{distInfo + "WHEEL", "Wheel-Version: 1.0\nGenerator: agentbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString(distInfo + "RECORD,,\n")
	files = append(files, [2]string{distInfo + "RECORD", record.String()})
	return zipOf(files)
}

func zipOf(files [][2]string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f[0], Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			panic(err)
		}
		_, _ = w.Write([]byte(f[1]))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// npmTarball is a package tarball: package/package.json and index.js.
func npmTarball(name string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range [][2]string{
		{"package/package.json", `{"name":"` + name + `","version":"` + fixtureVer + `","main":"index.js"}`},
		{"package/index.js", "exports.greet = () => \"hello from the tarball\";\n"},
	} {
		_ = tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), ModTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(f[1]))
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

// npmDocument is the registry's package document: one version whose
// tarball is at base, with its sha1 shasum and sha512 integrity.
func npmDocument(name, base string, tgz []byte) []byte {
	s1 := sha1.Sum(tgz)
	s512 := sha512.Sum512(tgz)
	doc := map[string]any{
		"name":      name,
		"dist-tags": map[string]string{"latest": fixtureVer},
		"versions": map[string]any{fixtureVer: map[string]any{
			"name": name, "version": fixtureVer, "main": "index.js",
			"dist": map[string]string{
				"tarball":   base + "/" + name + "/-/" + name + "-" + fixtureVer + ".tgz",
				"shasum":    hex.EncodeToString(s1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
			},
		}},
	}
	b, _ := json.Marshal(doc)
	return b
}

// goZip is the module zip of example.com/hello v1.0.0: every file under
// "module@version/".
func goZip() []byte {
	prefix := goModule + "@v" + fixtureVer + "/"
	return zipOf([][2]string{
		{prefix + "go.mod", "module " + goModule + "\n\ngo 1.19\n"},
		{prefix + "hello.go", "// Package hello is an agentbox test fixture.\npackage hello\n\n// Greet greets.\nfunc Greet() string { return \"hello from the module\" }\n"},
	})
}
