package main

import "github.com/agentbox/agentbox/session"

// statusExitCode and errorExitCode are the session package's one mapping
// from a session's status or error to docs/DESIGN.md's exit codes.
var (
	statusExitCode = session.StatusExitCode
	errorExitCode  = session.ErrorExitCode
)
