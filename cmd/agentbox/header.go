package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

// header is the start line of a session on stderr: what runs where, under
// which policy, recorded where.
type header struct {
	session, workspace string
	policy             *policy.Policy
	policySource       string // when policy is nil
	network            sandbox.NetworkMode
	mode               sandbox.WorkspaceMode
	audit              string
	broker             string // agent.BrokerSummary; "" = from policy
	learn              bool   // a learning run
	git                string // sandbox.Config.GitIdentity: who commits in the sandbox
}

// learnLine is the start header's line for a learning run.
const learnLine = "learning run: what the policy would ask about or deny runs and is recorded (would_ask/would_deny); nothing reaches the workspace before review (agentbox changes / apply); hardening and exec-time denials unchanged"

func (h header) print(w io.Writer) {
	net := orNone(h.network)
	src := h.policySource
	if h.policy != nil {
		src = h.policy.Source()
	}
	fmt.Fprintf(w, "session %s · policy %s · network %s · workspace %s (%s) · audit %s\n",
		h.session, src, net, h.workspace, h.mode, h.audit)
	if h.learn {
		fmt.Fprintln(w, learnLine)
	}
	if h.git != "" && (!strings.HasPrefix(h.git, policy.GitIdentityNone) || isGitWorkspace(h.workspace)) {
		fmt.Fprintf(w, "git commits as %s\n", h.git)
	}
	line := h.broker
	if line == "" && net == sandbox.NetworkProxy {
		line = agent.BrokerSummary(h.policy)
	}
	if line != "" {
		fmt.Fprintf(w, "network: %s\n", line)
	}
}

// isGitWorkspace reports whether the workspace's root holds a .git (a
// directory or a gitdir file): only there does "git commits as none" tell
// the user something they can act on before the agent commits.
func isGitWorkspace(ws string) bool {
	_, err := os.Lstat(filepath.Join(ws, ".git"))
	return err == nil
}

// auditPathOf is the audit log path the command writes to (as
// openAuditLog chooses it).
func auditPathOf(c *cli.Context) string {
	if p := c.String("audit"); p != "" {
		return p
	}
	p, _ := audit.DefaultPath()
	return p
}

// orNone is the network mode, "" meaning none.
func orNone(n sandbox.NetworkMode) sandbox.NetworkMode {
	if n == "" {
		return sandbox.NetworkNone
	}
	return n
}
