package layering

// Project are agentbox's package rules (docs/DESIGN.md, Architecture):
// cmd -> (batch, mcp) -> session -> (agent, workspace) -> (policy, audit,
// sandbox); backends are chosen in cmd and reached only through
// sandbox.Runtime and its optional powers.
var Project = Rules{
	EngineSDK: []string{
		"github.com/docker/docker",
		"github.com/docker/go-connections",
		"github.com/containerd",
		"github.com/moby",
		"k8s.io",
		"sigs.k8s.io",
	},
	EngineImporters: map[string]string{
		"sandbox/docker":     "the Docker Engine API backend",
		"sandbox/kubernetes": "the Kubernetes backend (client-go)",
		// Exception: `agentbox image build` builds agentbox's own images
		// (base, toolchains, the Kubernetes executor image) with the
		// Docker client, Docker-only by design; only cmd/agentbox, the
		// Docker backend (for its build-output reader) and the benchmarks
		// import it, never a package a session is made of (EngineFree).
		"images": "builds agentbox's own images with the Docker client (agentbox image build)",
		// Exception: test support checks what an engine holds (containers
		// left behind, images present, a private dockerd) independently of
		// the backends under test; only tests import it.
		"internal/testutil": "test support: inspects engines independently of the backends under test",
		// Exception: the benchmark program (make bench) measures engines
		// and clusters themselves (image sizes, engine info) beside the
		// backends.
		"internal/benchreport": "the benchmark program: measures engines and clusters directly",
	},
	EngineUsers: map[string]string{
		"cmd/...": "the CLI chooses and connects the backend",
	},
	EngineFree: []string{
		"agent", "audit", "batch", "devcontainer", "mcp", "netproxy",
		"policy", "sandbox", "sandbox/wire", "session", "workspace",
	},
	Below: map[string][]string{
		"policy/...":    {"agent/...", "workspace/...", "session/...", "batch/...", "mcp/...", "cmd/..."},
		"audit/...":     {"agent/...", "workspace/...", "session/...", "batch/...", "mcp/...", "cmd/..."},
		"sandbox/...":   {"agent/...", "workspace/...", "session/...", "batch/...", "mcp/...", "cmd/..."},
		"netproxy/...":  {"agent/...", "workspace/...", "session/...", "batch/...", "mcp/...", "cmd/..."},
		"devcontainer":  {"agent/...", "workspace/...", "session/...", "batch/...", "mcp/...", "cmd/..."},
		"workspace/...": {"agent/...", "session/...", "batch/...", "mcp/...", "cmd/..."},
		"agent/...":     {"workspace/...", "session/...", "batch/...", "mcp/...", "cmd/..."},
		"session/...":   {"batch/...", "mcp/...", "cmd/..."},
		"batch/...":     {"mcp/...", "cmd/..."},
		"mcp/...":       {"batch/...", "cmd/..."},
	},
	// Arrows (known violations of Below) is empty: agent stopped
	// importing workspace with issue 37 (session owns the per-call step).
	Arrows: map[string]string{},
}
