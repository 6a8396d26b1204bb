package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/session"
)

// Open a session on a runtime, make one tool call through its pipeline,
// and close it: session_start and session_end bracket the call in the
// audit log, and Close lists what changed and gives the exit code.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "session-example-")
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	_ = os.Mkdir(ws, 0o755)
	log, _ := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{})
	defer log.Close()

	p := policy.Default()
	ctx := context.Background()
	s, err := session.Open(ctx, &sandboxtest.FakeRuntime{}, session.Options{
		Policy: p, Sandbox: agent.SandboxConfig(p, ws), Audit: log,
		Record: session.Record{Task: "write a greeting", Version: "example"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := s.Start(ctx); err != nil { // writes session_start
		fmt.Println(err)
		return
	}
	o := s.Tools().Call(ctx, "call_1", agent.ToolWriteFile, `{"path": "hello.txt", "content": "hi\n"}`)
	fmt.Println("decision:", o.Decision)
	closed, err := s.Close(ctx, session.End{Status: agent.StatusOK, Steps: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range closed.Files {
		fmt.Println(f.Change, f.Path)
	}
	fmt.Println("mode:", s.Mode(), "exit code:", closed.ExitCode)
	// Output:
	// decision: allow
	// added hello.txt
	// mode: rw exit code: 0
}
