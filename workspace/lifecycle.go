package workspace

import (
	"context"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// Workspace is the user's directory as one session works on it, in one
// of its shapes (Shape). Its lifecycle, in order (containerd's
// Snapshotter is the model: one interface, the mount plan returned as
// data, optional powers as separate interfaces):
//
//  1. Made, by the shape's constructor (NewInPlace, NewStaged,
//     NewCopied), before the sandbox exists: a copy is made, a staging
//     layer prepared. A constructor that fails leaves nothing behind.
//  2. Plan: how the sandbox mounts it, as data (Plan.Configure puts it
//     into the sandbox's configuration). It does not change afterwards.
//  3. Begin (power Watcher), just before the sandbox starts: a workspace
//     the sandbox changes in place records its state, in the
//     background; Ready waits for it, before the first call.
//  4. AfterCall, after every tool call, the sandbox alive but idle:
//     what the call changed is decided (held changes leave the
//     sandbox's view) and promoted into the workspace or kept for
//     apply; the result is the call's checkpoint (nil: nothing changed,
//     or a shape that decides nothing per call).
//  5. Finish, once, when the sandbox is gone (nothing runs in it any
//     more, kept background processes included): the last changes are
//     decided as after a call, and the session's change list is taken.
//     lost says why the workspace misses changes the sandbox made (a pull
//     that came back short; "" = none): the change list then says
//     incomplete, and nothing is applied from it.
//  6. Pend (power Pender), once session_end is written: a copy's changes
//     wait for review (agentbox changes / apply), or are applied.
//  7. Close: what the workspace holds on the host is released. Without
//     Finish (the session never ran) everything it made is removed;
//     after it, what the session keeps stays (checkpoints, held changes,
//     a copy pending review). Close is idempotent, and never touches the
//     user's directory.
//
// A step may be left out (a session that never ran goes from 1 to 7);
// none is taken twice but Close. Calls must not overlap.
type Workspace interface {
	// Shape is the workspace's shape.
	Shape() Shape
	// Describe is one line for the session's header ("" = nothing to
	// say beyond the workspace mode).
	Describe() string
	// Plan is how the sandbox mounts the workspace.
	Plan() Plan
	// AfterCall decides and promotes (or keeps) what the call changed.
	AfterCall(ctx context.Context, callID string) (*Checkpoint, error)
	// Finish decides the last changes once the sandbox is gone and takes
	// the change list. The Result is valid with an error too.
	Finish(ctx context.Context, lost string) (Result, error)
	// Close releases the workspace (see the lifecycle above).
	Close() error
}

// Watcher is the power of a workspace the sandbox changes in place,
// whose change list compares it before and after: Begin records the
// before, in the background (it overlaps the sandbox's start), and Ready
// waits for it. Begin may be called more than once; the first counts.
type Watcher interface {
	Begin()
	Ready() error
}

// Pender is the power of a workspace whose changes outlive the session
// (a copy): once session_end is written, Pend records them as pending
// for review, or applies them (apply). Its Result's Files, when not nil,
// is the final change list. An incomplete change list is never applied
// (ErrIncomplete); a conflict or a guarded file stops the apply
// (ErrConflict, ErrGuarded) with the changes left pending.
type Pender interface {
	Pend(apply bool) (Result, error)
}

// Plan is how the sandbox mounts the workspace: data the session puts
// into the sandbox's configuration before it starts.
type Plan struct {
	// Dir is the host directory mounted at /workspace: the user's own,
	// a real copy, or, with Overlay, the overlay's lower layer.
	Dir string
	// Mode is how the sandbox sees it: rw or ro (a copy is rw).
	Mode sandbox.WorkspaceMode
	// Copy: Dir (or the overlay) is a session's copy, whose changes come
	// back for review.
	Copy bool
	// Overlay, when set, stages the sandbox's writes in an upper layer.
	Overlay *sandbox.Overlay
}

// Configure puts the plan into a sandbox configuration.
func (p Plan) Configure(cfg *sandbox.Config) {
	cfg.Workspace, cfg.WorkspaceMode, cfg.WorkspaceCopy, cfg.Overlay = p.Dir, p.Mode, p.Copy, p.Overlay
}

// Result is what Finish (or Pend) found.
type Result struct {
	// Files is the session's change list (session_end): what was
	// promoted into the workspace, what a copy holds for apply, or what
	// changed in place; never nil from Finish.
	Files []audit.FileChange
	// Last is the checkpoint of the decisions made once the sandbox was
	// gone (call id "end"), for the session to record; nil: none.
	Last *Checkpoint
	// Notes are what the user should know: held changes and where to
	// review them, a filled disk bound, a change list that could not be
	// taken, where a copy's changes wait.
	Notes []string
}

// Shape is one of the ways a session works on the workspace.
type Shape uint8

const (
	// ShapeInPlace: the sandbox works on the user's directory itself (rw
	// without staging, ro); the change list compares it before and after.
	ShapeInPlace Shape = iota
	// ShapeStaged: rw on an overlay; each call's allowed changes are
	// promoted into the workspace on the host, the rest held.
	ShapeStaged
	// ShapeOverlayCopy: copy mode on an overlay; each call's changes are
	// decided on the host and kept in the upper layer for apply.
	ShapeOverlayCopy
	// ShapeRealCopy: copy mode on a real (reflinked) copy on the host;
	// its changes are decided at apply.
	ShapeRealCopy
	// ShapePulledCopy: copy mode on a real copy that the sandbox holds
	// itself (carried over the executor's channel) and whose changes are
	// pulled back into the host's copy; decided at Finish.
	ShapePulledCopy
)

func (s Shape) String() string {
	return [...]string{"in place", "staged", "overlay copy", "real copy", "pulled copy", "unknown"}[min(int(s), 5)]
}

// Live reports whether the session's changes reach the user's directory
// while it runs (in place, or promoted after every call).
func (s Shape) Live() bool { return s == ShapeInPlace || s == ShapeStaged }

// Decides reports whether the host decides the changes (files.write
// rules, host hazards) before they count: after every call, or at Finish
// for a pulled copy. A real copy's are decided at apply; in place, only
// the sandbox's own masks stand in the way.
func (s Shape) Decides() bool {
	return s == ShapeStaged || s == ShapeOverlayCopy || s == ShapePulledCopy
}

// Copies reports whether the session works on a copy whose changes wait
// for review and apply.
func (s Shape) Copies() bool {
	return s == ShapeOverlayCopy || s == ShapeRealCopy || s == ShapePulledCopy
}

// withLost appends the incomplete marker to files when the workspace
// misses changes and the list does not say so yet; the result is never
// nil.
func withLost(files []audit.FileChange, lost string) []audit.FileChange {
	if lost != "" && audit.Incomplete(files) == "" {
		files = append(files, audit.IncompleteMarker(lost))
	}
	if files == nil {
		files = []audit.FileChange{}
	}
	return files
}
