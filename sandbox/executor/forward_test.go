package executor

import (
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartForwarderNoSocket(t *testing.T) {
	_, err := startForwarder(filepath.Join(t.TempDir(), "missing.sock"))
	if err == nil || !strings.Contains(err.Error(), "cannot connect the host's proxy socket") || !strings.Contains(err.Error(), "host-uds") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartForwarderCarries(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }() // echo; the probe just ends
		}
	}()
	stop, err := startForwarder(sock)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", ProxyListenAddr, err)
	}
	c, err := net.Dial("tcp", ProxyListenAddr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "ping" {
		t.Errorf("carried %q", b)
	}
	stop()
	if c, err := net.Dial("tcp", ProxyListenAddr); err == nil {
		c.Close()
		t.Error("the forwarder still listens after stop")
	}
}
