package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

// callSteps maps each call of session to the step the run printed for it
// ([6/30] is step 6): a tool call belongs to the model call before it.
func callSteps(path, session string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	steps, step := map[string]int{}, 0
	err = audit.Scan(f, func(_ int, r audit.Record) error {
		if r.Session != session {
			return nil
		}
		switch {
		case r.Event == audit.EventModelCall && r.Step > 0:
			step = r.Step
		case r.Event == audit.EventToolCall && r.CallID != "" && step > 0:
			if _, ok := steps[r.CallID]; !ok {
				steps[r.CallID] = step
			}
		}
		return nil
	})
	return steps, err
}

// resolveStep turns CALL as rewind and fork take it into a call id: a
// call id or a checkpoint's call as given, or a step number the run
// printed. For a step, after picks the last checkpoint at or before it
// (fork: the workspace as it was after step N), else the first at or
// after it (rewind: to before step N). It also says what was chosen.
func resolveStep(c *cli.Context, session string, st *workspace.Stage, arg string, after bool) (call, said string, err error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n <= 0 {
		return arg, "", nil // a call id (or none: the last call)
	}
	cps, err := st.Checkpoints()
	if err != nil {
		return "", "", exitWith(exitFailed, err)
	}
	for _, k := range cps {
		if k.CallID == arg {
			return arg, "", nil
		}
	}
	steps, err := callSteps(auditPathOf(c), session)
	if err != nil || len(steps) == 0 {
		return arg, "", nil // no log of the run: a checkpoint number, as before
	}
	found := ""
	for _, k := range cps {
		s, ok := steps[k.CallID]
		if !ok {
			continue
		}
		if after && s <= n {
			found = k.CallID
		}
		if !after && s >= n {
			found = k.CallID
			break
		}
	}
	if found == "" {
		what := "at or after"
		if after {
			what = "at or before"
		}
		return "", "", exitWith(exitUsage, fmt.Errorf("session %s changed no file %s step %d (see agentbox changes %s)", session, what, n, session))
	}
	return found, fmt.Sprintf("step %d (call %s)", steps[found], found), nil
}
