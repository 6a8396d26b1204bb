package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/container"
)

// TestGCOwners: with orphans of three users on the engine (the third
// faked by its owner uid label), gc run by each of two real users (root
// and uid 65534) removes that user's and says how many of the others' it
// saw and left; --all-owners is refused to a non-root user in one line
// and, as root, removes the others' too.
func TestGCOwners(t *testing.T) {
	cli := testutil.RequireDocker(t)
	ctx := context.Background()
	orphan := func(uid string) string {
		labels := sandbox.OwnerLabels()
		labels[sandbox.LabelSession], labels[sandbox.LabelOwner], labels[sandbox.LabelOwnerUID] = sandbox.NewID(), "999999999:1", uid
		resp, err := cli.ContainerCreate(ctx, &container.Config{Image: testutil.Image, Cmd: []string{"true"}, Labels: labels}, nil, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true}) })
		return resp.ID
	}
	exists := func(id string) bool { _, err := cli.ContainerInspect(ctx, id); return err == nil }
	mine, theirs := orphan(strconvUID()), orphan("4242")
	var u otherUser
	var nobodys string
	if os.Geteuid() == 0 {
		u, nobodys = newOtherUser(t), orphan(strconv.Itoa(otherUID))
	}
	env := baseEnv(t)

	// Not root: --all-owners is refused before anything is touched.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, testutil.Binary(t), "gc", "--all-owners")
	cmd.Env, cmd.Dir = env, os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 ||
		!strings.Contains(errb.String(), "needs root") || !exists(mine) || !exists(theirs) {
		t.Fatalf("gc --all-owners as nobody: %v\n%s%s", err, out.String(), errb.String())
	}

	// Another user's gc (uid 65534, a user of the engine) removes that
	// user's orphan only and counts root's and the third user's.
	if nobodys != "" {
		r := u.run(t, nil, "gc")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		last := lines[len(lines)-1]
		if r.code != 0 || !strings.Contains(r.stdout, "removed "+nobodys[:12]+": its owner process is gone") || strings.Contains(r.stdout, mine[:12]) || strings.Contains(r.stdout, theirs[:12]) ||
			!strings.Contains(last, "gc: removed ") || !strings.Contains(last, "orphaned engine object(s) of other users") || strings.Count(r.stdout, "gc: ") != 1 {
			t.Fatalf("gc as uid %d: %d, want %s removed, %s and %s left and counted in one summary line:\n%s%s", otherUID, r.code, nobodys[:12], mine[:12], theirs[:12], r.stdout, r.stderr)
		}
		if exists(nobodys) || !exists(mine) || !exists(theirs) {
			t.Fatalf("gc as uid %d: its orphan still there %v, root's gone %v, the third user's gone %v", otherUID, exists(nobodys), !exists(mine), !exists(theirs))
		}
	}

	r := abCmd{fullEnv: env}.run(t, "gc")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	last := lines[len(lines)-1]
	if r.code != 0 || !strings.Contains(r.stdout, "removed "+mine[:12]+": its owner process is gone") || strings.Contains(r.stdout, theirs[:12]) ||
		!strings.HasPrefix(last, "gc: removed ") || !strings.Contains(last, "orphaned engine object(s) of other users") || strings.Count(r.stdout, "gc: ") != 1 {
		t.Fatalf("gc: %d, want %s removed, %s left and counted in one summary line:\n%s%s", r.code, mine[:12], theirs[:12], r.stdout, r.stderr)
	}
	if exists(mine) || !exists(theirs) {
		t.Fatalf("gc: mine still there %v, the other user's gone %v", exists(mine), !exists(theirs))
	}

	if os.Geteuid() != 0 {
		t.Skip("--all-owners needs root")
	}
	r = abCmd{fullEnv: env}.run(t, "gc", "--all-owners")
	if r.code != 0 || strings.Count(r.stdout, "gc: ") != 1 || strings.Contains(r.stdout, "other users") || exists(theirs) {
		t.Fatalf("gc --all-owners: %d, want the other user's orphan %s removed:\n%s%s", r.code, theirs[:12], r.stdout, r.stderr)
	}
}

func strconvUID() string { return sandbox.OwnerLabels()[sandbox.LabelOwnerUID] }
