package agent

import (
	"os"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// SandboxConfig is the session configuration a policy's sandbox settings
// describe, for workspace (a host directory). The workspace mode "copy"
// becomes rw: the caller mounts a copy. The allow-listed host variables
// are read from the environment; nothing else is passed.
func SandboxConfig(p *policy.Policy, workspace string) sandbox.Config {
	st := p.Sandbox
	mode := sandbox.WorkspaceRW
	if st.Workspace == sandbox.WorkspaceRO {
		mode = sandbox.WorkspaceRO
	}
	env := map[string]string{}
	for _, name := range st.Env {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	return sandbox.Config{
		Image: st.Image, Runtime: st.Runtime, Workspace: workspace, WorkspaceMode: mode,
		Network: st.Network, User: st.User, CPUs: st.CPUs, MemoryBytes: st.MemoryBytes, Pids: st.Pids,
		Env: env, KeepBackground: st.Background == "keep", OutputCap: int(st.OutputMaxBytes),
	}
}
