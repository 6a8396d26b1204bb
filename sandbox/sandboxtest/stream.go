package sandboxtest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// runStream: with Stdout and Stderr set, the whole output reaches them,
// the streams apart, while the capped combined Output, its size and sha256
// stay as without them; a timeout keeps what was streamed; a writer that
// fails does not fail the call.
func runStream(t *testing.T, start Start) {
	s, _ := start(t)
	const n = 2 << 20
	var out, errb bytes.Buffer
	res, err := s.Exec(ctxT(t), sandbox.ExecRequest{Command: "head -c " + strconv.Itoa(n) + " /dev/zero | tr '\\0' x; echo MARK >&2",
		Timeout: time.Minute, Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("x", n)
	if out.Len() != n || sha256.Sum256(out.Bytes()) != sha256.Sum256([]byte(want)) || errb.String() != "MARK\n" {
		t.Errorf("streamed stdout %d bytes (want %d), stderr %q", out.Len(), n, errb.String())
	}
	if res.ExitCode != 0 || res.OutputBytes != n+5 || !res.Truncated || len(res.Output) > n/8 {
		t.Errorf("result: exit %d, %d bytes, truncated %v, kept %d", res.ExitCode, res.OutputBytes, res.Truncated, len(res.Output))
	}

	out.Reset()
	res, err = s.Exec(ctxT(t), sandbox.ExecRequest{Command: "head -c 100000 /dev/zero | tr '\\0' y; sleep 60", Timeout: time.Second, Stdout: &out})
	if err != nil || !res.TimedOut || out.String() != strings.Repeat("y", 100000) {
		t.Errorf("timeout while streaming: %v timed out %v, %d bytes streamed", err, res.TimedOut, out.Len())
	}

	res, err = s.Exec(ctxT(t), sandbox.ExecRequest{Command: "seq 1 100000; echo done", Timeout: time.Minute, Stdout: failWriter{}})
	if err != nil || res.ExitCode != 0 || !bytes.HasSuffix(res.Output, []byte("done\n")) {
		t.Errorf("a failing writer: %v exit %d", err, res.ExitCode)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }
