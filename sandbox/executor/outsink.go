package executor

import (
	"io"
	"os"
	"sync"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// outSink is where one exec's output goes: the capped capture the model
// sees and, when the host asked for streaming, Out frames tagged with the
// stream. Both pipe readers write through it; it serialises them, so the
// capture holds the two streams in the order they were read.
//
// It is bounded by backpressure: a reader sends its chunk before it reads
// the next, so a host that stops reading stalls the command, never the
// executor's memory. Once detached (the call is over) it discards
// everything: no frame of this exec may follow its final response.
type outSink struct {
	mu       sync.Mutex
	capt     *capture
	send     func(stream string, p []byte) error // nil: no streaming
	sendErr  error
	detached bool
}

// writer is the sink for one stream.
func (s *outSink) writer(stream string) io.Writer {
	return sinkWriter{s, stream}
}

func (s *outSink) write(stream string, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.detached {
		return
	}
	_, _ = s.capt.Write(p)
	if s.send != nil && s.sendErr == nil {
		// A failed send means the host is gone; the loop finds out.
		s.sendErr = s.send(stream, p)
	}
}

// detach discards whatever arrives from now on; it waits for a send in
// progress.
func (s *outSink) detach() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detached = true
}

type sinkWriter struct {
	s      *outSink
	stream string
}

func (w sinkWriter) Write(p []byte) (int, error) {
	w.s.write(w.stream, p)
	return len(p), nil
}

// copyOut reads r into w in chunks of at most wire.MaxChunk until every
// holder of the pipe is gone, then closes r.
func copyOut(w io.Writer, r *os.File) {
	buf := make([]byte, wire.MaxChunk)
	_, _ = io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, buf)
	r.Close()
}

// outPipes are the command's stdout and stderr: one pipe for both (the
// model sees them interleaved exactly as written), or two when the host
// streams them apart.
type outPipes struct {
	read  []*os.File // read ends, with their stream names
	names []string
	out   *os.File // the command's stdout
	err   *os.File // the command's stderr
}

func newOutPipes(apart bool) (*outPipes, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &outPipes{read: []*os.File{pr}, names: []string{wire.StreamStdout}, out: pw, err: pw}
	if !apart {
		return p, nil
	}
	er, ew, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	p.read, p.names, p.err = append(p.read, er), append(p.names, wire.StreamStderr), ew
	return p, nil
}

// closeWrite closes the executor's copies of the write ends (the command
// holds its own).
func (p *outPipes) closeWrite() {
	p.out.Close()
	if p.err != p.out {
		p.err.Close()
	}
}

// closeRead closes the read ends (the command never started).
func (p *outPipes) closeRead() {
	for _, r := range p.read {
		r.Close()
	}
}

// copyTo copies every pipe into sink until all are at EOF, then closes
// the returned channel.
func (p *outPipes) copyTo(sink *outSink) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range p.read {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyOut(sink.writer(p.names[i]), r)
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return done
}
