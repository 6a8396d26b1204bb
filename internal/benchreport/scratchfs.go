package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// scratchFS mounts a fresh ext4 filesystem with a journal (mkfs.ext4's
// default, a workstation's filesystem) on a sparse file in dir and returns
// its mount point. The write rows run on it, not on the temp directory's
// own filesystem: this machine's root is ext4 without a journal, where the
// kernel makes every file created within a minute of a mass removal (six
// while the inode table is not yet written back) skip the inodes just
// freed, at several times the CPU (ext4's recently_deleted, checked only
// without a journal), and every staged round removes its 10,000-file
// staging layer as its session ends: whichever round came next paid for
// the last one's clean-up. Needs root, mkfs.ext4 and a loop device.
func scratchFS(ctx context.Context, dir string) (mnt string, undo func(), err error) {
	img, mnt := filepath.Join(dir, "scratch.img"), filepath.Join(dir, "scratch")
	run := func(name string, args ...string) error {
		if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", nil, err
	}
	f, err := os.Create(img)
	if err != nil {
		return "", nil, err
	}
	err = f.Truncate(4 << 30)
	f.Close()
	if err != nil {
		return "", nil, err
	}
	if err := run("mkfs.ext4", "-q", "-F", img); err != nil {
		return "", nil, err
	}
	if err := run("mount", "-o", "loop", img, mnt); err != nil {
		return "", nil, err
	}
	return mnt, func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "unmounting the write rows' scratch filesystem %s: %v: %s; umount it by hand\n", mnt, err, strings.TrimSpace(string(out)))
		}
		_ = os.Remove(img)
	}, nil
}
