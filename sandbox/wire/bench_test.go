package wire

import (
	"context"
	"io"
	"net"
	"testing"
)

// BenchmarkChannelDownload: 10 MiB from the host-side "proxy" to the
// executor's side over a net.Pipe channel (framing, MACs and credit; no
// engine).
func BenchmarkChannelDownload(b *testing.B) {
	const size = 10 << 20
	src := make([]byte, size)
	_, f := startChannel(&testing.T{}, func(context.Context) (net.Conn, error) {
		a, c := net.Pipe()
		go func() {
			defer c.Close()
			one := make([]byte, 1)
			io.ReadFull(c, one)
			c.Write(src)
		}()
		return a, nil
	})
	b.SetBytes(size)
	for b.Loop() {
		s, err := f.mux.Open()
		if err != nil {
			b.Fatal(err)
		}
		s.Write([]byte("x"))
		n, err := io.Copy(io.Discard, s)
		if n != size {
			b.Fatalf("%d bytes: %v", n, err)
		}
		s.Close()
	}
}
