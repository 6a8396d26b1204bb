package netproxy

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand"
	"testing"
)

// repeatReader yields n bytes of block over and over, at most 16 KiB a
// read (a TLS record).
type repeatReader struct {
	block []byte
	n     int64
	off   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), 16<<10, int(r.n))]
	n := copy(p, r.block[r.off:])
	r.off = (r.off + n) % len(r.block)
	r.n -= int64(n)
	return n, nil
}

// scrubBlocks are 1 MiB of what a download may hold: zeros, random bytes
// (a compressed archive), and JSON text full of hex and base64 strings.
func scrubBlocks() map[string][]byte {
	rng := rand.New(rand.NewSource(38))
	zero := make([]byte, 1<<20)
	random := make([]byte, 1<<20)
	rng.Read(random)
	var text []byte
	for len(text) < 1<<20 {
		id, blob := make([]byte, 20), make([]byte, 48)
		rng.Read(id)
		rng.Read(blob)
		text = fmt.Appendf(text, `{"sha":"%s","name":"release-%d of the real project","data":"%s","url":"https://example.com/a%%20b?x=1&amp;y=2"},`+"\n",
			hex.EncodeToString(id), rng.Intn(1000), base64.StdEncoding.EncodeToString(blob))
	}
	return map[string][]byte{"zeros": zero, "random": random, "text": text[:1<<20]}
}

// BenchmarkScrubCopy100MB: 100 MB copied as a response body is, directly
// and through the scrubber (one secret), for each kind of content. MB/s is
// the figure to compare.
func BenchmarkScrubCopy100MB(b *testing.B) {
	sc := newScrubber([]string{testValue})
	blocks := scrubBlocks()
	for _, kind := range []string{"zeros", "random", "text"} {
		for _, mode := range []string{"direct", "scrubbed"} {
			b.Run(kind+"/"+mode, func(b *testing.B) {
				b.SetBytes(100 << 20)
				for b.Loop() {
					r := io.Reader(&repeatReader{block: blocks[kind], n: 100 << 20})
					if mode == "scrubbed" {
						r = newScrubReader(r, sc)
					}
					if n, err := io.Copy(io.Discard, struct{ io.Reader }{r}); err != nil || n != 100<<20 {
						b.Fatalf("%d bytes, %v", n, err)
					}
				}
			})
		}
	}
}
