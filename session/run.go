package session

import (
	"context"
	"errors"

	"github.com/agentbox/agentbox/agent"
)

// Run runs the model loop (agent.Run) in the session: the sandbox starts
// while the first model request is in flight (Start), and the session is
// closed at the end (Close), so the Result's FilesChanged is the session's
// change list. The workspace memory gets the run, then cfg.Events hears
// that it finished. The error is the loop's, else Close's; Closed.ExitCode
// is the run's exit code. A sandbox that did not start records nothing.
func Run(ctx context.Context, s *Session, cfg agent.RunConfig) (agent.Result, Closed, error) {
	cfg.Tools = s.tools
	if s.o.Record.Task == "" {
		s.o.Record.Task = cfg.Task
	}
	if s.o.Record.Model == "" {
		s.o.Record.Model = cfg.ModelName
		if n, ok := cfg.Model.(interface{ Name() string }); ok && s.o.Record.Model == "" {
			s.o.Record.Model = n.Name()
		}
	}
	if s.tools.Session == nil {
		cfg.Start = s.Start
	} else if !s.recorded {
		if _, err := s.Start(ctx); err != nil {
			res := agent.Result{Status: agent.StatusError, Error: err.Error(), SessionID: s.id}
			closed, _ := s.Close(ctx, End{Status: agent.StatusError, Err: err})
			return res, closed, err
		}
	}
	res, err := agent.Run(ctx, cfg)
	closed, cerr := s.Close(ctx, End{Status: res.Status, Steps: res.Steps, Answer: res.Answer, Err: err})
	if !s.recorded {
		return res, closed, err // the sandbox did not start; nothing was recorded
	}
	res.FilesChanged = closed.Files
	if err == nil && cerr != nil && errors.Is(cerr, ErrAudit) {
		res.Status, res.Error = agent.StatusError, cerr.Error()
	}
	if cfg.Memory != nil {
		if merr := cfg.Memory.Append(agent.MemoryEntry{Session: s.id, Task: s.redact(cfg.Task), Status: res.Status, Answer: res.Answer}); merr != nil && cfg.Events != nil {
			cfg.Events.Notice(merr.Error())
		}
	}
	if cfg.Events != nil {
		maxSteps := cfg.MaxSteps
		if maxSteps <= 0 {
			maxSteps = agent.DefaultMaxSteps
		}
		cfg.Events.Finished(res.Steps, maxSteps, res)
	}
	if err == nil {
		err = cerr
	}
	return res, closed, err
}
