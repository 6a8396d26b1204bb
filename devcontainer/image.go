package devcontainer

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// dockerfileName is where the Dockerfile goes in the build context.
const dockerfileName = ".agentbox-devcontainer.Dockerfile"

// Image returns the image the sandbox runs: c.Image, or the image built
// from c.Build by b (the runtime's image-building power), tagged
// agentbox-devcontainer:HASH by the content hash of the Dockerfile, the
// context and the args, and built only when that tag is missing.
func Image(ctx context.Context, b sandbox.ImageBuilder, c *Config, progress io.Writer) (string, error) {
	if c.Build == nil {
		return c.Image, nil
	}
	if progress == nil {
		progress = io.Discard
	}
	tarball, err := contextTar(c.Build)
	if err != nil {
		return "", fmt.Errorf("devcontainer build context: %w", err)
	}
	tag := "agentbox-devcontainer:" + hashInputs(tarball, c.Build)
	if ok, err := b.HasImage(ctx, tag); err == nil && ok {
		return tag, nil
	}
	fmt.Fprintf(progress, "building the devcontainer's Dockerfile as %s\n", tag)
	err = b.BuildImage(ctx, sandbox.ImageBuild{
		Context: bytes.NewReader(tarball), Dockerfile: dockerfileName, Tag: tag,
		Args: c.Build.Args, Target: c.Build.Target,
		Labels:   map[string]string{"org.agentbox.devcontainer": c.Path},
		Progress: progress,
	})
	if failed := (*sandbox.BuildFailed)(nil); errors.As(err, &failed) {
		return "", fmt.Errorf("building the devcontainer's Dockerfile %s: %w", c.Build.Dockerfile, err)
	}
	if err != nil {
		return "", fmt.Errorf("building the devcontainer's Dockerfile: %w", err)
	}
	return tag, nil
}

func hashInputs(tarball []byte, b *Build) string {
	h := sha256.New()
	h.Write(tarball)
	keys := make([]string, 0, len(b.Args))
	for k := range b.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "arg %q=%q\n", k, b.Args[k])
	}
	fmt.Fprintf(h, "target %q\n", b.Target)
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// contextTar packs the context directory (symlinks as links, never
// followed; zero times so equal inputs hash equally) and the Dockerfile.
func contextTar(b *Build) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(b.Context, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(b.Context, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil // sockets, devices, fifos
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = filepath.ToSlash(rel), time0, time0, time0
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	df, err := os.ReadFile(b.Dockerfile)
	if err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: dockerfileName, Mode: 0o644, Size: int64(len(df)), ModTime: time0}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(df); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var time0 = time.Unix(0, 0)
