package main_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// exec --json gives output that is not valid UTF-8 as base64, so the bytes
// printed are the bytes the command wrote and match output_sha256.
func TestExecJSONOutputBytesFaithful(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	r := agentbox(t, nil, "exec", "--workspace", ws, "--json", "--", `printf 'a\377\376b\000c'`)
	var j struct {
		Output   string `json:"output"`
		Encoding string `json:"output_encoding"`
		Bytes    int64  `json:"output_bytes"`
		SHA      string `json:"output_sha256"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || r.code != 0 {
		t.Fatalf("--json: %v %q %s", err, r.stdout, r.stderr)
	}
	if j.Encoding != "base64" {
		t.Fatalf("output_encoding = %q, want base64 for invalid UTF-8", j.Encoding)
	}
	raw, err := base64.StdEncoding.DecodeString(j.Output)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if string(raw) != "a\xff\xfeb\x00c" || int64(len(raw)) != j.Bytes || hex.EncodeToString(sum[:]) != j.SHA {
		t.Errorf("bytes %q (%d) sha %s; want the command's bytes, output_bytes %d, output_sha256 %s", raw, len(raw), hex.EncodeToString(sum[:]), j.Bytes, j.SHA)
	}
	// Valid UTF-8 stays a plain string.
	r = agentbox(t, nil, "exec", "--workspace", ws, "--json", "--", "echo héllo")
	j.Encoding = ""
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || j.Encoding != "" || j.Output != "héllo\n" {
		t.Errorf("utf-8 output: %+v %v", j, err)
	}
}
