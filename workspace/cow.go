package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

const metaFile = "meta.json"

// CopyOptions say how NewCopy makes a copy.
type CopyOptions struct {
	Session      string // the session id (the copy's directory name)
	DiskBytes    int64  // bound on what the session may write; 0 = none
	DiskRequired bool   // the user asked for the bound: fail if it cannot be enforced
	NoOverlay    bool   // overlay unavailable (AGENTBOX_OVERLAY=off): make a real copy
	NoOverlayWhy string // with NoOverlay: why, for Describe ("" = AGENTBOX_OVERLAY=off)
	MaxCopyBytes int64  // a real copy refuses workspaces larger than this
	// BoundInSandbox, when set, says where the sandbox enforces DiskBytes
	// itself (Kubernetes: in the pod): a real copy then needs no bound of
	// its own, and Describe says so.
	BoundInSandbox string
	// Decide decides an overlay copy's changes by the policy's
	// files.write rules after every call (see Copy.AfterCall); nil: by
	// the built-in host hazards alone.
	Decide WriteDecider
}

// Copy is one session's copy of a workspace, in a Store: an overlay upper
// directory (the exact change set) or a real copy of the tree.
type Copy struct {
	Meta
	Root   string // <store>/<session>
	before Snap   // a real copy's state right after copying
	disk   *disk  // the size-bounded filesystem of the upper layer, while mounted
	noOvl  string // why no overlay
	lost   string // why the copy misses changes (see MarkIncomplete)
	stage  *Stage // an overlay's per-call decisions (Staging)
}

// MarkIncomplete records that the copy misses some of the session's
// changes (a sandbox that could not bring them all back): its change list
// says incomplete, and nothing is applied from it.
func (c *Copy) MarkIncomplete(why string) { c.lost = why }

// Upper is the overlay upper directory (where the sandbox's writes go).
func (c *Copy) Upper() string {
	if c.disk != nil {
		return filepath.Join(c.disk.mnt, "upper")
	}
	return filepath.Join(c.Root, "upper")
}

// OverlayWork is overlay's work directory (same filesystem as Upper).
func (c *Copy) OverlayWork() string {
	if c.disk != nil {
		return filepath.Join(c.disk.mnt, "work")
	}
	return filepath.Join(c.Root, "work")
}

// Tree is a real copy's directory.
func (c *Copy) Tree() string { return filepath.Join(c.Root, "tree") }

// ChangedRoot is the directory that holds the changed files at their paths.
func (c *Copy) ChangedRoot() string {
	if c.Kind == KindOverlay {
		return c.Upper()
	}
	return c.Tree()
}

// Configure points a sandbox configuration at the copy: an overlay mount
// over the workspace, or the real copy mounted read-write. An overlay is
// staged: host code decides its changes after every call (AfterCall), so
// the sandbox needs neither read-only masks for files.write nor an
// effects walk of its own.
func (c *Copy) Configure(cfg *sandbox.Config) {
	cfg.WorkspaceMode = sandbox.WorkspaceRW
	cfg.WorkspaceCopy = true
	if c.Kind == KindOverlay {
		cfg.Workspace = c.Workspace
		cfg.Overlay = &sandbox.Overlay{Upper: c.Upper(), Work: c.OverlayWork(), Lower: c.OverlayLower(), Staged: c.stage != nil}
		return
	}
	cfg.Workspace = c.Tree()
	cfg.Overlay = nil
}

// Describe is one line for the terminal: what kind of copy, and the bound.
func (c *Copy) Describe() string {
	what := map[string]string{
		KindOverlay: "a copy-on-write overlay of the workspace (each call's changes decided on the host; held ones: agentbox changes " + c.Session + " --held)",
		KindReflink: "a reflinked copy of the workspace (overlay unavailable: " + c.noOvl + "; a snapshot of the copy taken up front, changes checked in the sandbox after every call and decided at apply)",
		KindCopy:    "a full copy of the workspace (overlay unavailable: " + c.noOvl + "; no reflinks on this filesystem; a snapshot of the copy taken up front, changes checked in the sandbox after every call and decided at apply)",
	}[c.Kind]
	return fmt.Sprintf("working on %s; disk bound: %s", what, c.DiskBound)
}

// NewCopy makes the copy of the workspace src for one session in store.
func NewCopy(store Store, src string, o CopyOptions) (*Copy, error) {
	if Inside(store.Dir, src) {
		return nil, fmt.Errorf("%w: workspace copies live in %s, inside the workspace %s; set XDG_STATE_HOME to a directory outside it", sandbox.ErrConfig, store.Dir, src)
	}
	d, err := store.dir(o.Session)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(store.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the workspace copy: %w", err)
	}
	if err := os.Mkdir(d, 0o700); err != nil {
		return nil, fmt.Errorf("creating the workspace copy: %w", err)
	}
	c := &Copy{Root: d, Meta: Meta{Session: o.Session, Workspace: src, State: StateRunning, Created: time.Now().UTC(), Owner: sandbox.OwnerLabels()}}
	ok := false
	defer func() {
		if !ok {
			c.unmount()
			_ = RemoveTree(d)
		}
	}()
	if c.Since, err = clockProbe(d); err != nil {
		return nil, err
	}
	why := overlayUnusable(src, d, o.NoOverlay)
	if o.NoOverlay && o.NoOverlayWhy != "" {
		why = o.NoOverlayWhy
	}
	if why == "" {
		c.Kind = KindOverlay
		if err = c.makeUpper(src, o); err == nil {
			c.stage, err = OpenStage(c.Upper(), src, c.StageDir(), o.Decide)
		}
		if c.stage != nil {
			c.stage.Keep = true
		}
	} else {
		err = c.makeTree(src, o, why)
	}
	if err != nil {
		return nil, err
	}
	if err := c.save(); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// makeUpper creates the upper and work directories, on a size-bounded
// filesystem when a bound is asked for and can be enforced.
func (c *Copy) makeUpper(src string, o CopyOptions) error {
	c.DiskBound = "none"
	if o.DiskBytes > 0 {
		dk, why := mountDisk(c.Root, o.DiskBytes)
		switch {
		case dk != nil:
			c.disk = dk
			c.DiskBound = fmt.Sprintf("%d MiB (ext4 image)", o.DiskBytes>>20)
		case o.DiskRequired:
			return fmt.Errorf("%w: sandbox.limits.disk cannot be enforced here: %s; remove the limit from the policy to run without a bound", sandbox.ErrConfig, why)
		default:
			c.DiskBound = "not enforced (" + why + ")"
		}
	}
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", src, err)
	}
	if err := c.makeLowerLink(); err != nil {
		return err
	}
	for _, p := range []string{c.Upper(), c.OverlayWork()} {
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("creating the workspace copy: %w", err)
		}
	}
	// The merged root takes the upper root's owner and mode: the workspace's.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		_ = os.Lchown(c.Upper(), int(st.Uid), int(st.Gid))
	}
	return os.Chmod(c.Upper(), fi.Mode().Perm())
}

// makeTree makes a real copy (reflinked where the filesystem can).
func (c *Copy) makeTree(src string, o CopyOptions, whyNot string) error {
	c.noOvl = whyNot
	c.DiskBound = "not enforced (a real copy)"
	if o.BoundInSandbox != "" && o.DiskBytes > 0 {
		c.DiskBound = fmt.Sprintf("%d MiB (%s)", o.DiskBytes>>20, o.BoundInSandbox)
	} else if o.DiskBytes > 0 && o.DiskRequired {
		return fmt.Errorf("%w: sandbox.limits.disk cannot be enforced on a real copy (overlay unavailable: %s); remove the limit from the policy to run without a bound", sandbox.ErrConfig, whyNot)
	}
	reflinked, err := CopyTreeReflink(src, c.Tree(), o.MaxCopyBytes)
	if err != nil {
		return err
	}
	c.Kind = KindCopy
	if reflinked {
		c.Kind = KindReflink
	}
	c.before, err = Snapshot(c.Tree())
	return err
}

// Scan lists what the session changed so far (cost: the changes, for
// an overlay). Call it when nothing runs in the sandbox any more.
func (c *Copy) Scan() ([]audit.FileChange, error) {
	var ch []audit.FileChange
	if c.Kind == KindOverlay {
		var err error
		if ch, err = c.scanOverlay(); err != nil {
			return nil, err
		}
	} else {
		after, err := Snapshot(c.Tree())
		if err != nil {
			return nil, err
		}
		ch = Diff(c.before, after)
	}
	if c.lost != "" && audit.Incomplete(ch) == "" {
		ch = append(ch, audit.IncompleteMarker(c.lost))
	}
	return ch, nil
}

// Finish records the session's changes once its sandbox is closed: the
// copy becomes pending (or empty, and is removed). A bounded upper layer
// is moved off its image first.
func (c *Copy) Finish() ([]audit.FileChange, error) {
	changes, err := c.Scan()
	if err != nil {
		return nil, err
	}
	if c.stage != nil {
		removeScrub(c.Upper()) // what holding left behind, once the sandbox is gone
	}
	if c.disk != nil {
		if err := c.moveOffDisk(); err != nil {
			return nil, err
		}
		if c.stage != nil {
			c.stage.Upper = c.Upper()
		}
	}
	c.Meta.Changes = changes
	c.State = StatePending
	if len(changes) == 0 {
		c.State = StateEmpty
		_ = c.removeData()
	}
	return changes, c.save()
}

func (c *Copy) save() error {
	b, err := json.MarshalIndent(c.Meta, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Root, metaFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("recording the workspace copy: %w", err)
	}
	return os.Rename(tmp, filepath.Join(c.Root, metaFile))
}

// removeData removes everything of the copy but its record.
func (c *Copy) removeData() error {
	c.unmount()
	ents, err := os.ReadDir(c.Root)
	if err != nil {
		return fmt.Errorf("removing the workspace copy: %w", err)
	}
	for _, e := range ents {
		if e.Name() == metaFile {
			continue
		}
		if err := RemoveTree(filepath.Join(c.Root, e.Name())); err != nil && e.Name() != "work" {
			// overlay's work directory may hold an empty, root-owned
			// directory that only root can remove: it is left behind.
			return err
		}
	}
	return nil
}

// Remove deletes the copy and its record (a run that failed to start).
func (c *Copy) Remove() error {
	c.unmount()
	return RemoveTree(c.Root)
}

// clockProbe returns the filesystem clock now, as the ctime of a new file:
// every entry changed from now on has a ctime at or after it.
func clockProbe(dir string) (int64, error) {
	p := filepath.Join(dir, ".clock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("creating the workspace copy: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	_ = os.Remove(p)
	if err != nil {
		return 0, fmt.Errorf("creating the workspace copy: %w", err)
	}
	return StatOf(fi).CTime, nil
}

// overlayUnusable says why an overlay cannot serve src ("" when it can).
func overlayUnusable(src, dir string, off bool) string {
	if off {
		return "turned off (AGENTBOX_OVERLAY=off)"
	}
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil || !strings.Contains(string(b), "\toverlay\n") {
		return "the kernel has no overlay filesystem"
	}
	// The workspace's own path may hold anything: the overlay mounts it
	// through a link (OverlayLower). The copy's directory holds the
	// upper layer and the link, so its path must be safe.
	if strings.ContainsAny(dir, overlayUnsafe) {
		return fmt.Sprintf("the path %s holds a character overlay options cannot carry (, : \\ or =); set XDG_STATE_HOME to a directory whose path holds none", dir)
	}
	if Inside(dir, src) || Inside(src, dir) {
		return "the workspace and the copy overlap"
	}
	if err := setUserXattr(dir); err != nil {
		return "the copy's filesystem has no user extended attributes"
	}
	return ""
}
