package workspace

import (
	"os"
	"os/exec"
)

// Capabilities says, for agentbox doctor, how copies are made here and
// whether a disk bound can be enforced on them.
func Capabilities(store Store) (copies, disk string) {
	dir := store.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "cannot create " + dir + ": " + err.Error(), "unknown"
	}
	copies = "copy-on-write overlays (constant cost) in " + dir
	if why := overlayUnusable("/nonexistent-workspace", dir, os.Getenv("AGENTBOX_OVERLAY") == "off"); why != "" {
		copies = "real copies (reflinked where the filesystem can; cost grows with the workspace): no overlay: " + why
	}
	switch {
	case os.Geteuid() != 0:
		disk = "not enforced: sandbox.limits.disk needs agentbox to run as root (a loop-mounted ext4 image); a policy that sets it is refused"
	default:
		if _, err := exec.LookPath("mkfs.ext4"); err != nil {
			disk = "not enforced: mkfs.ext4 is missing (apt-get install e2fsprogs)"
		} else {
			disk = "enforced on copies: sandbox.limits.disk (default 2 GiB) on a sparse ext4 image per session"
		}
	}
	return copies, disk
}
