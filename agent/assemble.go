package agent

import (
	"context"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// SandboxConfig is the session configuration a policy's sandbox settings
// describe, for workspace (a host directory). The workspace mode "copy"
// becomes rw: the caller mounts a copy. The allow-listed host variables
// are read from the environment; nothing else is passed but git's
// settings that agentbox makes (the identity sandbox.git_identity names as
// author and committer, automatic maintenance off: see gitEnv).
func SandboxConfig(p *policy.Policy, workspace string) sandbox.Config {
	st := p.Sandbox
	mode := sandbox.WorkspaceRW
	if st.Workspace == sandbox.WorkspaceRO {
		mode = sandbox.WorkspaceRO
	}
	id := ResolveGitIdentity(context.Background(), st.GitIdentity, workspace)
	env := gitEnv(id) // the policy's sandbox.env, named by the user, may override it
	for _, name := range st.Env {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	_, readDeny := p.FileRules(false)
	_, writeDeny := p.FileRules(true)
	return sandbox.Config{
		ReadDeny: readDeny, WriteDeny: writeDeny, SessionTimeout: st.SessionTimeout,
		Image: st.Image, Runtime: st.Runtime, Workspace: workspace, WorkspaceMode: mode,
		Network: st.Network, User: st.User, CPUs: st.CPUs, MemoryBytes: st.MemoryBytes, Pids: st.Pids,
		Env: env, KeepBackground: st.Background == "keep", OutputCap: int(st.OutputMaxBytes),
		DiskBytes: st.DiskBytes, GitIdentity: id.String(),
	}
}

// RedactingLog is an audit log that also redacts secrets from text that
// leaves agentbox; *audit.Writer implements it.
type RedactingLog interface {
	AuditLog
	Redact(s string) string
}

var _ RedactingLog = (*audit.Writer)(nil)

// NewTools assembles the tool pipeline of one session: the policy, the
// audit log (and its redaction), the approver, and what the session
// configuration tells the model (call timeout, output cap, network,
// workspace mode). It also fills cfg.Enforce, what the executor enforces
// on its own: the policy's exact source for the exec-time command rules
// (asks at exec time go to appr and are recorded; with no one to ask they
// are denied) and the write rules of the effects check. It is the one
// assembly for run, exec and batch; start the sandbox with cfg afterwards.
// The caller sets Session once the sandbox runs.
func NewTools(p *policy.Policy, cfg *sandbox.Config, log RedactingLog, appr Approver) (*Tools, error) {
	t := &Tools{
		Policy: p, Audit: log, Approver: appr, Redact: log.Redact,
		CallTimeout: p.Sandbox.CallTimeout, CallTimeoutMax: p.Sandbox.CallTimeoutMax, OutputCap: cfg.OutputCap,
		Network: cfg.Network, WorkspaceMode: cfg.WorkspaceMode,
	}
	if ct, ok := cfg.Egress.(CallTracker); ok {
		t.Calls = ct
	}
	en, err := Enforcement(p, t.execApprover())
	if err != nil {
		return nil, err
	}
	hb := cfg.Enforce.Heartbeat
	cfg.Enforce = en
	cfg.Enforce.Heartbeat = hb
	return t, nil
}

// ModelSpec chooses the model of a session: the scripted model when Script
// is set, else the OpenAI-compatible endpoint that Config describes.
type ModelSpec struct {
	Script     *Script
	ScriptPath string // names the script in the audit log
	Config     Config
}

// NewModel is the one model constructor. It returns the model and the name
// recorded in the audit log.
func NewModel(spec ModelSpec) (Model, string, error) {
	if spec.Script != nil {
		name := "script:" + filepath.Base(spec.ScriptPath)
		return NewScripted(name, spec.Script), name, nil
	}
	m, err := NewOpenAI(spec.Config)
	if err != nil {
		return nil, "", err
	}
	return m, m.Name(), nil
}
