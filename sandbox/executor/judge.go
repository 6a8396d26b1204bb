package executor

import (
	"github.com/agentbox/agentbox/policy"
	"strings"
	"sync"
)

// Verdict is what the command rules say about one program as executed:
// the policy's own verdict, so the exec-time layer and the up-front check
// speak one type.
type Verdict = policy.Verdict

// Verdicts, least restrictive first.
const (
	Allow = policy.Allow
	Ask   = policy.Ask
	Deny  = policy.Deny
)

// Decision is a Judge's answer for one argv.
type Decision struct {
	Verdict Verdict
	Rule    string
	Reason  string
}

// Judge decides one program as it is executed: argv as the new image
// received it, and exe, the executable's path, when argv[0] does not name
// the executable (bash's `exec -a ls rm`, a multi-call binary) — then both
// names matter and the judge must weigh both; exe is "" when argv[0] names
// the executable (an alias such as python3 → python3.11 included). It must
// be safe for concurrent use and fast: it runs while the program waits at
// its exec stop.
type Judge interface {
	JudgeExec(exe string, argv []string) Decision
}

// JudgeFunc adapts a function of one argv whose argv[0] is the program
// that really runs (the executable's path when argv[0] names another).
type JudgeFunc func(argv []string) Decision

// JudgeExec calls f with argv[0] replaced by exe when exe is set.
func (f JudgeFunc) JudgeExec(exe string, argv []string) Decision {
	if exe != "" {
		argv = append([]string{exe}, argv[min(1, len(argv)):]...)
	}
	return f(argv)
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

func (c *cachedJudge) JudgeExec(exe string, argv []string) Decision {
	key := exe + "\x00\x00" + strings.Join(argv, "\x00")
	c.mu.Lock()
	d, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return d
	}
	d = c.j.JudgeExec(exe, argv)
	c.mu.Lock()
	if len(c.m) >= judgeCacheSize {
		clear(c.m)
	}
	c.m[key] = d
	c.mu.Unlock()
	return d
}
