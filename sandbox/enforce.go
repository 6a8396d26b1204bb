package sandbox

import (
	"context"
	"time"
)

// Enforcement is what the executor enforces inside the sandbox on its own:
// the policy's command rules at every exec, the effects check after every
// call, and the dead man's switch.
type Enforcement struct {
	// Policy is the policy source (YAML) whose command rules judge every
	// program a command executes; nil: programs are recorded, not judged.
	Policy     []byte
	PolicyName string
	// Approve answers an `ask` at exec time while the program waits; nil
	// denies every such ask.
	Approve func(ctx context.Context, ask ExecAsk) bool
	// WriteRules are the files.write rules whose deny globs are checked
	// for new or changed entries after every call.
	WriteRules *FileRules
	// Heartbeat is how often the host pings the executor; silence for
	// three intervals makes it kill every process and exit. 0 disables.
	Heartbeat time.Duration
	// SetIDFilter makes the executor install agentbox's own seccomp
	// filter (no set-id bits; no clone the tracer would not follow; clone3
	// and openat2 answered ENOSYS) on every command itself: for a backend
	// whose runtime cannot load agentbox's profile (Kubernetes: the node's
	// RuntimeDefault) or cannot answer ENOSYS from it (gVisor). Docker's
	// profile has the same rules.
	SetIDFilter bool
	// ByContent makes the executor know programs by content: the image's
	// manifest of executables (sandbox.Manifest), cached on the host under
	// Image, the image's id ("sha256:…"; "" builds it anew each session).
	// Backends set it.
	ByContent bool
	Image     string
	// ManifestDir is where manifests are cached ("" = ManifestDir()).
	ManifestDir string
}

// ExecAsk is an exec the command rules say to ask about.
type ExecAsk struct {
	Argv   []string `json:"argv"`
	PID    int      `json:"pid"`
	Rule   string   `json:"rule,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// ProgramCount is one program that ran during a call and how often: the
// name it ran under, what the image's manifest knows it as (Program; ""
// without a manifest), the toolchain whose command it ran as part of, and
// whether its file is not one of the image's executables.
type ProgramCount struct {
	Name      string `json:"name"`
	Program   string `json:"program,omitempty"`
	Toolchain string `json:"toolchain,omitempty"`
	Unknown   bool   `json:"unknown,omitempty"`
	Count     int    `json:"count"`
}

// DeniedExec is a program stopped at its exec, before its first
// instruction. Decision is "deny", or "ask" for an ask that was refused.
type DeniedExec struct {
	Argv     []string `json:"argv"`
	Exe      string   `json:"exe,omitempty"`
	PID      int      `json:"pid"`
	Decision string   `json:"decision"`
	Rule     string   `json:"rule,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

// Alarm is a forbidden effect found (and undone) after a call: What is
// "created", "changed", "removed", "setid", "device", "pids" or
// "incomplete"; Action "removed", "restored", "cleared", "killed",
// "reported", or "dropped" (a change a Kubernetes sandbox made was not
// brought back to the host).
type Alarm struct {
	Path   string `json:"path,omitempty"`
	What   string `json:"what"`
	Action string `json:"action"`
	Rule   string `json:"rule,omitempty"`
	// Argv and Parents (nearest first, "argv0 (pid)") name the program of
	// an "unexpected_exec" (it ran, and the up-front analysis of the
	// command did not predict it) or an "unknown_binary" (its file is not
	// one of the image's executables) alarm.
	Argv    []string `json:"argv,omitempty"`
	Parents []string `json:"parents,omitempty"`
}
