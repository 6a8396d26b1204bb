package workspace

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// geteuid is os.Geteuid; tests replace it to take the non-root path.
var geteuid = os.Geteuid

// disk is a sparse ext4 image, loop-mounted, that holds an overlay upper
// layer: the session can write at most its size (ENOSPC beyond). Only
// root can mount it; the image costs what it holds, not its size.
type disk struct {
	img, mnt string
}

// mountDisk creates and mounts a size-bytes image below root. It returns
// nil and why when it cannot.
func mountDisk(root string, size int64) (*disk, string) {
	if geteuid() != 0 {
		return nil, "agentbox runs as a non-root user and cannot mount a size-limited filesystem"
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return nil, "mkfs.ext4 is missing (apt-get install e2fsprogs)"
	}
	d := &disk{img: filepath.Join(root, "disk.img"), mnt: filepath.Join(root, "disk")}
	f, err := os.OpenFile(d.img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err.Error()
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return nil, err.Error()
	}
	// No journal, no reserved blocks, lazy inode tables: ~0.1 s for 2 GiB.
	if out, err := exec.Command(mkfs, "-q", "-F", "-m", "0", "-O", "^has_journal",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0", d.img).CombinedOutput(); err != nil {
		_ = os.Remove(d.img)
		return nil, fmt.Sprintf("mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Mkdir(d.mnt, 0o700); err != nil {
		_ = os.Remove(d.img)
		return nil, err.Error()
	}
	if out, err := exec.Command("mount", "-o", "loop,nosuid,nodev,noexec", d.img, d.mnt).CombinedOutput(); err != nil {
		_ = os.Remove(d.mnt)
		_ = os.Remove(d.img)
		return nil, fmt.Sprintf("mount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	_ = os.Remove(filepath.Join(d.mnt, "lost+found"))
	return d, ""
}

// unmount unmounts and removes the image (what it held is lost).
func (c *Copy) unmount() {
	if c.disk == nil {
		return
	}
	_ = unix.Unmount(c.disk.mnt, unix.MNT_DETACH)
	_ = os.Remove(c.disk.mnt)
	_ = os.Remove(c.disk.img)
	c.disk = nil
}

// moveOffDisk copies the upper layer (the change set: whiteouts, opaque
// markers and modes included) off the image to Root/upper, then unmounts
// and removes the image.
func (c *Copy) moveOffDisk() error {
	dst := filepath.Join(c.Root, "upper")
	c.noteFull()
	if out, err := exec.Command("cp", "-a", "--", c.Upper(), dst).CombinedOutput(); err != nil {
		return fmt.Errorf("moving the change set off its disk image: %v: %s; it stays in %s", err, strings.TrimSpace(string(out)), c.disk.img)
	}
	c.unmount()
	return nil
}

// noteFull sets DiskFull when the bounded filesystem is (nearly) full:
// writes past the bound failed in the sandbox with ENOSPC.
func (c *Copy) noteFull() {
	if c.disk == nil {
		return
	}
	var st unix.Statfs_t
	if unix.Statfs(c.disk.mnt, &st) == nil {
		c.DiskFull = st.Bavail*uint64(st.Bsize) < 1<<20 || st.Ffree == 0
	}
}

// setUserXattr checks that dir's filesystem keeps user extended
// attributes (overlay records opaque directories in them).
func setUserXattr(dir string) error {
	if err := unix.Setxattr(dir, "user.agentbox.probe", []byte("1"), 0); err != nil {
		return err
	}
	return unix.Removexattr(dir, "user.agentbox.probe")
}
