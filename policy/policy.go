// Package policy decides whether an agent's action may run in the sandbox.
//
// A policy is a YAML file (see policy.example.yaml at the repository root,
// which is also the built-in default). Load and Parse validate it strictly
// and report every problem as file:line:col. Decide takes one Action — a
// bash script for execute_bash, or a path for read_file/write_file — and
// returns a Decision: allow, ask or deny, with a one-line reason and, for
// scripts, the verdict of every simple command the script contains.
//
// Scripts are analysed statically with mvdan.cc/sh/v3/syntax in the bash
// dialect: every simple command anywhere in the script counts, wrappers such
// as env, timeout, xargs, find -exec and bash -c are unwrapped, and shell
// features that defeat static analysis (function definitions, aliases,
// source, assignments to PATH-like variables, /dev/tcp) are always denied.
// Decide is pure: it does no I/O and is safe for concurrent use.
package policy

import (
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// Verdict is a decision: allow, ask or deny. The type lives in package
// sandbox so that the executor judges with the same type without
// importing the policy package.
type Verdict = sandbox.Verdict

// The verdicts, least restrictive first.
const (
	Allow = sandbox.VerdictAllow
	Ask   = sandbox.VerdictAsk
	Deny  = sandbox.VerdictDeny
)

func parseVerdict(s string) (Verdict, bool) {
	switch s {
	case "allow":
		return Allow, true
	case "ask":
		return Ask, true
	case "deny":
		return Deny, true
	}
	return 0, false
}

// Kind is the kind of action to decide.
type Kind int

// The kinds of action: a bash script (execute_bash), a read_file path and a
// write_file path.
const (
	Command Kind = iota
	Read
	Write
)

func (k Kind) String() string {
	switch k {
	case Command:
		return "command"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Action is one request of the model. Command is set for Kind Command, Path
// for Read and Write (relative to /workspace, or absolute).
type Action struct {
	Kind    Kind
	Command string
	Path    string
}

// Part is the decision for one simple command of a script (after
// unwrapping), one redirection target, one always-denied construct, or the
// path of a file action.
type Part struct {
	Argv    []string `json:"argv"`
	Verdict Verdict  `json:"decision"`
	Rule    string   `json:"rule"`
	Pattern string   `json:"pattern,omitempty"`
	Why     string   `json:"why,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// Decision is the outcome of Decide. Rule, Pattern and Why are those of the
// deciding part: the first part with the most restrictive verdict.
type Decision struct {
	Verdict Verdict `json:"decision"`
	Reason  string  `json:"reason"`
	Rule    string  `json:"rule,omitempty"`
	Pattern string  `json:"pattern,omitempty"`
	Why     string  `json:"why,omitempty"`
	Parts   []Part  `json:"commands,omitempty"`
}

// Policy is a loaded, validated policy. It is immutable; Decide is safe for
// concurrent use.
type Policy struct {
	Path    string // file it came from; "" for the built-in default
	SHA256  string // hex sha256 of the raw bytes
	Sandbox SandboxSettings
	Audit   AuditSettings

	cmd     commandRules
	read    fileRules
	write   fileRules
	net     netRules  // network: (see network.go)
	secrets []*Secret // secrets: (see secrets.go)

	fromScratch bool // extends: none (not layered on the default)
}

// FromScratch reports whether the file says extends: none: it is not laid
// on the built-in default, and may be looser than it anywhere.
func (p *Policy) FromScratch() bool { return p.fromScratch }

// SandboxSettings is the policy's sandbox: block, with defaults filled in.
type SandboxSettings struct {
	Image          string
	Runtime        string                // OCI runtime; "" = engine default
	Workspace      sandbox.WorkspaceMode // rw | ro | copy
	Network        sandbox.NetworkMode   // none | proxy | open
	User           string                // uid:gid; "" = the invoking user's
	CPUs           float64
	MemoryBytes    int64
	Pids           int64
	DiskBytes      int64 // what a session may write, rw (staged) or copy (limits.disk)
	DiskSet        bool  // limits.disk was written in the policy: fail closed if it cannot be enforced
	CallTimeout    time.Duration
	CallTimeoutMax time.Duration // the most a model may ask for in one call (timeouts.call_max)
	SessionTimeout time.Duration
	OutputMaxBytes int64
	Env            []string // names of host variables passed in
	Background     string   // kill | keep
	// GitIdentity is sandbox.git_identity: "host" (the workspace's git
	// user.name/user.email as host git resolves them), "none", or a fixed
	// "Name <email>". See ParseGitIdentity.
	GitIdentity string
}

// AuditSettings is the policy's audit: block, with defaults filled in.
type AuditSettings struct {
	Redact       []*regexp.Regexp
	PreviewBytes int64
	// Checkpoints is a directory where a signed checkpoint of the log is
	// written when the log is closed (audit.checkpoints); "" for none.
	Checkpoints string
}

type commandRules struct {
	def, dynamic Verdict
	unknown      Verdict    // unknown_binaries: programs not in the image (default allow)
	lists        [3][]*rule // indexed by Verdict: allow, ask, deny
	idx          *atomic.Pointer[ruleIndex]
}

type fileRules struct {
	allow, deny []string
}

// FileRules returns the cleaned globs of files.read (write false) or
// files.write (write true), so that the in-container executor can re-check
// the path a request resolves to with MatchFile.
func (p *Policy) FileRules(write bool) (allow, deny []string) {
	r := p.read
	if write {
		r = p.write
	}
	return append([]string(nil), r.allow...), append([]string(nil), r.deny...)
}

// MaxOutputBytes bounds sandbox.output.max_bytes: the output kept per call
// travels in one frame from the sandbox.
const MaxOutputBytes = 4 << 20

func defaultSandbox() SandboxSettings {
	return SandboxSettings{
		Image:          sandbox.DefaultImage,
		Workspace:      sandbox.WorkspaceRW,
		Network:        sandbox.NetworkNone,
		CPUs:           sandbox.DefaultCPUs,
		MemoryBytes:    sandbox.DefaultMemoryBytes,
		Pids:           sandbox.DefaultPids,
		DiskBytes:      2 << 30,
		CallTimeout:    sandbox.DefaultCallTimeout,
		CallTimeoutMax: sandbox.DefaultCallTimeoutMax,
		SessionTimeout: time.Hour,
		OutputMaxBytes: sandbox.DefaultOutputCap,
		Env:            []string{"LANG", "TZ"},
		Background:     "kill",
		GitIdentity:    GitIdentityHost,
	}
}

func newPolicy() *Policy {
	return &Policy{
		Sandbox: defaultSandbox(),
		Audit:   AuditSettings{PreviewBytes: 4 << 10},
		cmd:     commandRules{def: Ask, dynamic: Deny, unknown: Allow, idx: &atomic.Pointer[ruleIndex]{}},
		read:    fileRules{allow: []string{"**"}},
		write:   fileRules{allow: []string{"**"}},
	}
}
