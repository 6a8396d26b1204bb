package executor

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// A streaming exec sends its whole output as Out frames, stdout and stderr
// apart, before the final response, which keeps the capped combined
// output, its size and its sha256; an exec that did not ask sends none.
func TestServeStreamsOutput(t *testing.T) {
	s := hostServer(t)
	h := serve(t, s, &wire.Request{Cap: 1024})
	if r := h.recv(); r.Error != "" {
		t.Fatal(r.Error)
	}
	h.send(&wire.Request{Op: wire.OpExec, Command: "head -c 200000 /dev/zero | tr '\\0' a; echo ERR >&2; echo tail", TimeoutMS: 20_000, StreamOutput: true})
	id := h.id
	got := map[string]*strings.Builder{wire.StreamStdout: {}, wire.StreamStderr: {}}
	var final *wire.Response
	for final == nil {
		r := h.recv()
		if r.ID != id {
			t.Fatalf("frame for %d, want %d", r.ID, id)
		}
		if r.Out == nil {
			final = r
			break
		}
		if len(r.Out.Data) > wire.MaxChunk {
			t.Errorf("chunk of %d bytes, over %d", len(r.Out.Data), wire.MaxChunk)
		}
		got[r.Out.Stream].Write(r.Out.Data)
	}
	wantOut := strings.Repeat("a", 200000) + "tail\n"
	if got[wire.StreamStdout].String() != wantOut || got[wire.StreamStderr].String() != "ERR\n" {
		t.Errorf("stdout %d bytes (want %d), stderr %q", got[wire.StreamStdout].Len(), len(wantOut), got[wire.StreamStderr].String())
	}
	if final.ExitCode != 0 || final.OutputBytes != int64(len(wantOut)+4) || !final.Truncated || len(final.Output) > 1200 {
		t.Errorf("final: exit %d, %d bytes, truncated %v, kept %d", final.ExitCode, final.OutputBytes, final.Truncated, len(final.Output))
	}

	h.send(&wire.Request{Op: wire.OpExec, Command: "echo out; echo err >&2", TimeoutMS: 20_000})
	r := h.recv()
	if r.Out != nil || r.ID != h.id || string(r.Output) != "out\nerr\n" {
		t.Errorf("not streaming: %+v", r)
	}
	h.w.Close()
	if err := <-h.err; err != nil {
		t.Errorf("serve: %v", err)
	}
}
