package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// otherUID is the second user of the host in tests (nobody).
const otherUID = 65534

// otherUser is a second user of the host for tests that need two: uid
// 65534 in the engine socket's group, with its own home and a copy of the
// binary it can reach (t.TempDir's parents are root's only). Skips unless
// the test runs as root.
type otherUser struct {
	top  string // world-readable; shared directories go here
	home string // the user's own
	bin  string
	cred *syscall.Credential
}

func newOtherUser(t *testing.T) otherUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a second user's agentbox needs root")
	}
	var groups []uint32
	if sock := engineSocket(); sock != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(sock, &st); err != nil {
			t.Fatalf("the engine's socket %s: %v", sock, err)
		}
		groups = append(groups, st.Gid)
	}
	top, err := os.MkdirTemp("", "agentbox-two-users-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	u := otherUser{top: top, home: filepath.Join(top, "other"), bin: filepath.Join(top, "agentbox"),
		cred: &syscall.Credential{Uid: otherUID, Gid: otherUID, Groups: groups}}
	for _, d := range []string{u.home, filepath.Join(u.home, "ws")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := os.ReadFile(testutil.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(u.bin, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return u
}

// command is agentbox args as the other user, in its home, with its own
// state and extra added to its environment.
func (u otherUser) command(extra []string, args ...string) *exec.Cmd {
	cmd := exec.Command(u.bin, args...)
	cmd.Dir = u.home
	cmd.Env = append([]string{"HOME=" + u.home, "XDG_STATE_HOME=" + filepath.Join(u.home, "state"), "PATH=" + os.Getenv("PATH"), "NO_COLOR=1",
		"AGENTBOX_MANIFEST_DIR=" + filepath.Join(u.home, "manifests"), "AGENTBOX_RUNTIME_DIR=" + filepath.Join(u.home, "run")}, extra...)
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		cmd.Env = append(cmd.Env, "DOCKER_HOST="+h)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	cmd.WaitDelay = 10 * time.Second // a child holding its output cannot hang Wait
	return cmd
}

// run runs agentbox args as the other user to the end (5 minutes at most).
func (u otherUser) run(t *testing.T, extra []string, args ...string) result {
	t.Helper()
	cmd := u.command(extra, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("running agentbox as uid %d: %v", otherUID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() { <-ctx.Done(); _ = cmd.Process.Kill() }()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running agentbox as uid %d: %v", otherUID, err)
	}
	return result{code, out.String(), errb.String(), cmd.Process.Pid}
}

// engineSocket is the path of the Docker engine's unix socket ("" when
// DOCKER_HOST names another transport).
func engineSocket() string {
	h := os.Getenv("DOCKER_HOST")
	if h == "" {
		return "/var/run/docker.sock"
	}
	if p, ok := strings.CutPrefix(h, "unix://"); ok {
		return p
	}
	return ""
}
