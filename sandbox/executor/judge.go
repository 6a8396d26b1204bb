package executor

import (
	"strings"
	"sync"
)

// Verdict is what the command rules say about one program as executed.
type Verdict int

// Verdicts, least restrictive first.
const (
	Allow Verdict = iota
	Ask
	Deny
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "deny"
}

// Decision is a Judge's answer for one argv.
type Decision struct {
	Verdict Verdict
	Rule    string
	Reason  string
}

// Judge decides one program's argv as it is executed (argv[0] as given or,
// when argv[0] names another program, the executable's path). It must be
// safe for concurrent use and fast: it runs while the program waits at its
// exec stop.
type Judge interface {
	JudgeArgv(argv []string) Decision
}

// JudgeFunc adapts a function to Judge.
type JudgeFunc func(argv []string) Decision

// JudgeArgv calls f.
func (f JudgeFunc) JudgeArgv(argv []string) Decision { return f(argv) }

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

func (c *cachedJudge) JudgeArgv(argv []string) Decision {
	key := strings.Join(argv, "\x00")
	c.mu.Lock()
	d, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return d
	}
	d = c.j.JudgeArgv(argv)
	c.mu.Lock()
	if len(c.m) >= judgeCacheSize {
		clear(c.m)
	}
	c.m[key] = d
	c.mu.Unlock()
	return d
}
