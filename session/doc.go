// Package session owns one agentbox session from start to end, between the
// front-ends (run, exec, mcp, batch) and the agent's model loop: which
// workspace mode the backend's capabilities allow, the workspace copy,
// the enforcement, the sandbox, the session_start and session_end
// records, the change list, and the one mapping from a session's status
// to the process's exit code (ExitCode).
package session
