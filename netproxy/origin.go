package netproxy

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

// programOf checks a secret bound to programs (secrets.NAME.during)
// against the processes that opened the connection: every process holding
// it must be in the process tree of a program during names. It records the
// program in ev (the receipt) and returns why not ("" when it may go). A
// connection whose processes are unknown gets no secret bound to programs.
func programOf(s Secret, o *sandbox.Origin, ev *Event) string {
	if o != nil && len(o.Holders) > 0 {
		ev.PID, ev.Argv = o.Holders[0].PID, firstArgv(o.Holders[0].Chain)
	}
	if len(s.Spec.During) == 0 {
		return ""
	}
	name := s.Spec.Name
	switch {
	case o == nil:
		return fmt.Sprintf("secrets.%s is bound to programs (during) and the connection cannot be attributed to a process (it did not come through the executor's channel)", name)
	case o.Error != "" || len(o.Holders) == 0:
		return fmt.Sprintf("secrets.%s is bound to programs (during) and the connection cannot be attributed to a process: %s", name, orNone(o.Error))
	}
	for _, h := range o.Holders {
		argv, ok := s.Spec.DuringProgram(h.Chain)
		if !ok {
			return fmt.Sprintf("secrets.%s is bound to programs matching %q and the connection was opened by process %d (%s), outside their process tree", name, s.Spec.DuringText(), h.PID, clip(strings.Join(firstArgv(h.Chain), " ")))
		}
		if h.PID == ev.PID {
			ev.Argv = argv // the receipt names the program during matched
		}
	}
	return ""
}

func firstArgv(chain [][]string) []string {
	if len(chain) == 0 {
		return nil
	}
	return chain[0]
}
