package wire

import "io"

// Streams an OutChunk belongs to.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// MaxChunk bounds the data of one OutChunk; the executor reads the
// command's pipes in pieces of at most this size.
const MaxChunk = 32 << 10

// OutChunk is a piece of a streaming exec's output, as the command wrote
// it to one of its streams. Chunks of one stream arrive in order; the two
// streams interleave in the order the executor read them.
//
// Streaming is bounded by backpressure, not by buffering: the executor
// sends each chunk before it reads the next, and the host hands each one
// to its writer before it reads the next frame, so a writer that stops
// taking output stalls the command (as a pipe would); the executor still
// kills it at the call's timeout, but the host's call waits for the
// writer. Neither side holds more than one chunk.
type OutChunk struct {
	Stream string `json:"stream"`
	Data   []byte `json:"data"`
}

// outWriters hands a streaming exec's chunks to the caller's writers. A
// writer that fails (a closed pipe) gets nothing more; the command runs on
// and the capped output still reaches the model and the audit log.
type outWriters struct {
	w      map[string]io.Writer
	failed map[string]bool
}

func newOutWriters(stdout, stderr io.Writer) *outWriters {
	return &outWriters{w: map[string]io.Writer{StreamStdout: stdout, StreamStderr: stderr}, failed: map[string]bool{}}
}

func (o *outWriters) write(c *OutChunk) {
	w := o.w[c.Stream]
	if w == nil || o.failed[c.Stream] || len(c.Data) == 0 {
		return
	}
	if _, err := w.Write(c.Data); err != nil {
		o.failed[c.Stream] = true
	}
}
