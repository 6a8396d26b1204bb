package devcontainer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Whatever the document, Parse does not panic, and what it accepts has no
// refused field, no host variable and no root user.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"image": "agentbox/base:latest", "postCreateCommand": {"a": ["x", "y"]}}`,
		`{"build": {"dockerfile": "Dockerfile", "args": {"A": "b"}}, "remoteUser": "1000:1000"}`,
		`{"image": "x", /* c */ "runArgs": ["--privileged"],}`,
		`{"image": "x", "containerEnv": {"A": "${localEnv:HOME}"}}`,
	} {
		f.Add(s)
	}
	ws := f.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := Parse([]byte(doc), ws, ws)
		if err != nil {
			return
		}
		plain, _ := StripJSONC([]byte(doc))
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(plain, &raw)
		for k := range refused {
			if _, ok := raw[k]; ok {
				t.Fatalf("accepted refused field %s in %q", k, doc)
			}
		}
		for k, v := range c.Env {
			if strings.Contains(v, "${") {
				t.Fatalf("accepted variable in containerEnv.%s: %q", k, v)
			}
		}
		if c.User != "" && (strings.HasPrefix(c.User, "0:") || strings.HasSuffix(c.User, ":0")) {
			t.Fatalf("accepted root user %q", c.User)
		}
	})
}
