// Package session owns one agentbox session from start to end, between the
// front-ends (run, exec, mcp, batch) and the agent's model loop:
//
//   - Open decides the workspace mode from the backend's declared
//     capabilities (sandbox.Capabilities: a backend whose workspace
//     capability is the channel works on a copy where rw was asked for),
//     makes the session's one workspace.Workspace in its shape (a copy
//     or overlay in copy mode; in rw, where the backend can stage, a
//     staged workspace whose changes are promoted on the host after every
//     call; else in place), assembles the tool pipeline and fills the
//     enforcement once, and starts the sandbox unless the caller wants it
//     later (Options.Lazy: overlapping the first model request, the first
//     MCP call, exec's up-front decision).
//   - Start starts the sandbox if needed and writes session_start, once.
//   - Tools hands out the pipeline: every tool call goes through it.
//   - AfterCall is the per-call step (the pipeline's one hook,
//     agent.CallHook): after every call, before the result goes back, it
//     promotes a staged workspace's changes (or decides a copy overlay's),
//     records the checkpoint and the held changes, and tells the model
//     what was held.
//   - Close brings the changes back (pull, last promotion), lists them,
//     writes session_end, removes the sandbox, finishes a copy (applied or
//     left for review) and returns the one exit code (ExitCode).
//
// A session's state is explicit (created, started, closing, closed), and
// what it acquires (the workspace, the sandbox) has its release registered
// as it is acquired: the sandbox is closed in one place, whichever way the
// session ends.
//
// Run (the model loop) and Exec (one command) are the bracket for
// `agentbox run`/batch tasks and `agentbox exec`; mcp calls Open, Start
// and Close itself.
package session
