// Package workspace is everything agentbox does with the host directory a
// sandbox works on. Workspace is its lifecycle, one interface whose doc
// comment gives the steps, implemented by each shape: InPlace, Staged
// (rw on an overlay, promoted after every call) and Copied (an overlay
// copy, a real copy, or a real copy pulled back over the channel); the
// contract suite in workspacetest runs on each. Beneath them: detecting
// what a session changed (Snapshot, Diff), copying the directory
// (CopyTree, NewCopy), the one change engine that reads, decides and
// promotes an overlay's upper layer (Stage: the only reader of an upper
// directory, a copy's change list included; directories the sandbox alone
// sees are sealed, unseen.go), carrying a copy's changes back (Apply) and
// exporting them (Export).
package workspace
