package audit

import (
	"fmt"
	"strconv"
)

// Events of the layers below the up-front check.
const (
	// EventExecDenied is one program the executor stopped at its exec,
	// before its first instruction: Argv, PID, Exe, Rule, Decision.
	EventExecDenied = "exec_denied"
)

// DecidedByExecutor marks a decision taken inside the sandbox at exec time.
const DecidedByExecutor = "executor"

// Program is one program that ran during a call and how often: the name
// it ran under, and what the exec-time identity says it is (Program: the
// image's program its content is, python3.11 for a copy run as ./lister;
// Toolchain: the toolchain whose command it ran as part of; Unknown: not
// one of the image's executables).
type Program struct {
	Name      string `json:"name"`
	Program   string `json:"program,omitempty"`
	Toolchain string `json:"toolchain,omitempty"`
	Unknown   bool   `json:"unknown,omitempty"`
	Count     int    `json:"count"`
}

// maxArgv bounds the argv words recorded for one exec; the rest is counted.
const maxArgv = 64

// appendExecInfo appends the exec-time members of r, in field order.
func appendExecInfo(b []byte, r *Record) ([]byte, error) {
	if len(r.Argv) > 0 {
		v, err := marshalValue(r.Argv)
		if err != nil {
			return nil, err
		}
		b = append(appendKey(b, "argv"), v...)
	}
	b = optInt(b, "pid", r.PID)
	b = optString(b, "exe", r.Exe)
	if len(r.Parents) > 0 {
		v, err := marshalValue(r.Parents)
		if err != nil {
			return nil, err
		}
		b = append(appendKey(b, "parents"), v...)
	}
	b = optString(b, "path", r.Path)
	b = optString(b, "what", r.What)
	b = optString(b, "action", r.Action)
	if len(r.Programs) > 0 {
		b = appendKey(b, "programs")
		b = append(b, '[')
		for i, p := range r.Programs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, p.Name)
			if p.Program != "" {
				b = append(b, `,"program":`...)
				b = appendString(b, p.Program)
			}
			if p.Toolchain != "" {
				b = append(b, `,"toolchain":`...)
				b = appendString(b, p.Toolchain)
			}
			if p.Unknown {
				b = append(b, `,"unknown":true`...)
			}
			b = append(b, `,"count":`...)
			b = strconv.AppendInt(b, int64(p.Count), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = optInt(b, "programs_dropped", r.ProgramsDropped)
	return b, nil
}

// execInfo redacts and bounds the exec-time members of c (a copy of r).
func (z sanitizer) execInfo(c *Record) {
	if len(c.Argv) > 0 {
		n := min(len(c.Argv), maxArgv)
		argv := make([]string, 0, n+1)
		for _, a := range c.Argv[:n] {
			argv = append(argv, z.text(a))
		}
		if extra := len(c.Argv) - n; extra > 0 {
			argv = append(argv, fmt.Sprintf("…[%d more arguments]", extra))
		}
		c.Argv = argv
	}
	c.Exe, c.Path, c.What, c.Action = z.text(c.Exe), z.text(c.Path), z.text(c.What), z.text(c.Action)
	if len(c.Parents) > 0 {
		ps := make([]string, len(c.Parents))
		for i, p := range c.Parents {
			ps[i] = z.text(p)
		}
		c.Parents = ps
	}
	if len(c.Programs) > 0 {
		progs := make([]Program, len(c.Programs))
		for i, p := range c.Programs {
			progs[i] = Program{Name: z.text(p.Name), Program: z.text(p.Program), Toolchain: z.text(p.Toolchain), Unknown: p.Unknown, Count: p.Count}
		}
		c.Programs = progs
	}
}
