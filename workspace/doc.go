// Package workspace is everything agentbox does with the host directory a
// sandbox works on: resolving it (Resolve), detecting what a session
// changed (Snapshot, Diff), copying it (CopyTree, WorkCopy), carrying a
// copy's changes back (Apply) and exporting them (Export).
package workspace
