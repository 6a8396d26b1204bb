package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// overlayUnsafe are the characters overlay's mount options cannot carry
// in a layer's path: "," and ":" split options and lower layers, "=" and
// "\" are read as syntax. A path holding one could alias another
// directory as a layer (a workspace named "a,lowerdir=/etc").
const overlayUnsafe = ",:\\="

// lowerLinkName is the link, in the copy's own directory, that an overlay
// mounts as its lower layer when the workspace's path is unsafe.
const lowerLinkName = "lower"

// OverlayLower is the path the overlay should mount as its lower layer
// in place of the workspace ("" = the workspace itself): a link to the
// workspace under the copy's directory, whose path holds nothing the
// mount options misread. The kernel resolves the link when it mounts the
// overlay, so the layer is exactly the workspace; the link lives in the
// session's private directory, which the sandbox never sees, and goes
// with it (no mount to undo, nothing for gc beyond the directory).
func (c *Copy) OverlayLower() string {
	if !strings.ContainsAny(c.Workspace, overlayUnsafe) {
		return ""
	}
	return filepath.Join(c.Root, lowerLinkName)
}

// makeLowerLink creates OverlayLower's link when the workspace needs one.
func (c *Copy) makeLowerLink() error {
	l := c.OverlayLower()
	if l == "" {
		return nil
	}
	abs, err := filepath.Abs(c.Workspace)
	if err != nil {
		return fmt.Errorf("linking the workspace for the overlay: %w", err)
	}
	if err := os.Symlink(abs, l); err != nil {
		return fmt.Errorf("linking the workspace for the overlay: %w", err)
	}
	return nil
}
