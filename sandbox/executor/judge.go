package executor

import (
	"strings"
	"sync"

	"github.com/agentbox/agentbox/sandbox"
)

// Verdict is what the command rules say about one program as executed:
// the policy's own verdict (sandbox.Verdict, which policy.Verdict is), so
// the exec-time layer and the up-front check speak one type.
type Verdict = sandbox.Verdict

// Verdicts, least restrictive first.
const (
	Allow = sandbox.VerdictAllow
	Ask   = sandbox.VerdictAsk
	Deny  = sandbox.VerdictDeny
)

// Decision is a Judge's answer for one argv.
type Decision struct {
	Verdict Verdict
	Rule    string
	Reason  string
}

// Exec is one program at its exec stop, as a Judge sees it.
type Exec struct {
	// Argv is argv as the new image received it.
	Argv []string
	// Exe is the executable's path when argv[0] does not name the
	// executable (bash's `exec -a ls rm`, a multi-call binary): then both
	// names matter. "" when argv[0] names it (an alias such as python3 →
	// python3.11 included).
	Exe string
	// Names are the names the executed file's content has in the image
	// (its manifest): a copy or link of python3 under any name has
	// python3's. Every one of them must be weighed too.
	Names []string
	// Unknown is set when the file is not one of the image's executables
	// (built, downloaded or copied in the session): the policy's
	// commands.unknown_binaries applies too. Never set without a manifest.
	Unknown bool
	// Toolchain is set when the program runs as part of a toolchain's
	// command (the go command running its compile or vet, or the test
	// binary go test built; gcc running cc1 or ld): it is part of the
	// command that ran the toolchain's driver, which was judged at its
	// own exec stop, so only what denies it by name counts (and
	// commands.unknown_binaries when Unknown). Set from the image's
	// manifest only.
	Toolchain string
}

// Judge decides one program as it is executed: the most restrictive of
// what argv[0], Exe and each of Names say, and of unknown_binaries when
// Unknown. It must be safe for concurrent use and fast: it runs while the
// program waits at its exec stop.
type Judge interface {
	JudgeExec(x Exec) Decision
}

// JudgeFunc adapts a function of one argv whose argv[0] is the program
// that really runs; it is called for argv[0], Exe and each of Names, and
// the most restrictive answer wins (Unknown is not weighed).
type JudgeFunc func(argv []string) Decision

// JudgeExec calls f for each name of the program; for a program that runs
// as part of a toolchain's command, only a denial counts.
func (f JudgeFunc) JudgeExec(x Exec) Decision {
	d := f.judgeNames(x)
	if x.Toolchain != "" && d.Verdict != Deny {
		return Decision{Verdict: Allow, Rule: "toolchain " + x.Toolchain, Reason: "part of the " + x.Toolchain + " command the agent ran"}
	}
	return d
}

func (f JudgeFunc) judgeNames(x Exec) Decision {
	argv := x.Argv
	if x.Exe != "" {
		argv = append([]string{x.Exe}, argv[min(1, len(argv)):]...)
	}
	d := f(argv)
	for _, n := range x.Names {
		if e := f(append([]string{n}, x.Argv[min(1, len(x.Argv)):]...)); e.Verdict > d.Verdict {
			d = e
		}
	}
	return d
}

var _ Judge = JudgeFunc(nil)

// JudgeLoader builds the Judge from the policy source the host sends in
// hello (the YAML of the policy file). An error refuses the session.
type JudgeLoader func(name string, src []byte) (Judge, error)

// cachedJudge remembers recent decisions: scripts run the same programs
// with the same arguments many times.
type cachedJudge struct {
	j  Judge
	mu sync.Mutex
	m  map[string]Decision
}

const judgeCacheSize = 4096

func newCachedJudge(j Judge) *cachedJudge {
	return &cachedJudge{j: j, m: map[string]Decision{}}
}

func (c *cachedJudge) JudgeExec(x Exec) Decision {
	key := x.Toolchain + "\x00\x00" + x.Exe + "\x00\x00" + strings.Join(x.Names, "\x00") + "\x00\x00" + strings.Join(x.Argv, "\x00")
	if x.Unknown {
		key = "?" + key
	}
	c.mu.Lock()
	d, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return d
	}
	d = c.j.JudgeExec(x)
	c.mu.Lock()
	if len(c.m) >= judgeCacheSize {
		clear(c.m)
	}
	c.m[key] = d
	c.mu.Unlock()
	return d
}
