package agent

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/policy"
)

// gitConfigEnv turns git's automatic maintenance off in the sandbox (by
// GIT_CONFIG_COUNT/KEY/VALUE, which agentbox sets and the agent cannot:
// GIT_* assignments are always denied): `git maintenance run --auto` and
// `git gc --auto`, which git commit starts on its own, would otherwise run
// detached and be killed at the end of the call ("maintenance died of
// signal 9"). The host's git maintains the repository as before.
var gitConfigEnv = [][2]string{{"maintenance.auto", "false"}, {"gc.auto", "0"}}

// GitIdentity is who commits in the sandbox: the author and committer
// agentbox sets (never the agent), and where they came from.
type GitIdentity struct {
	Name, Email string
	Source      string // "host git config of DIR", "the policy's sandbox.git_identity", or why there is none
}

// String is the identity as the start header says it.
func (g GitIdentity) String() string {
	if g.Name == "" || g.Email == "" {
		return "none (" + g.Source + ")"
	}
	return g.Name + " <" + g.Email + "> (" + g.Source + ")"
}

// ResolveGitIdentity decides the sandbox's git identity from the policy's
// sandbox.git_identity: "host" asks host git what it resolves for the
// workspace (`git -C WORKSPACE config user.name` and user.email: the
// repository's, the user's and the system's configuration), "none" sets
// none, anything else is the fixed "Name <email>" the policy names.
func ResolveGitIdentity(ctx context.Context, setting, workspace string) GitIdentity {
	switch setting {
	case policy.GitIdentityNone:
		return GitIdentity{Source: "sandbox.git_identity: none"}
	case policy.GitIdentityHost, "":
		name, email := hostGitConfig(ctx, workspace, "user.name"), hostGitConfig(ctx, workspace, "user.email")
		if name == "" || email == "" {
			return GitIdentity{Source: "host git has no user.name/user.email for the workspace: git config --global user.name, or sandbox.git_identity"}
		}
		return GitIdentity{Name: name, Email: email, Source: "host git config"}
	}
	name, email, err := policy.ParseGitIdentity(setting)
	if err != nil { // the loader validated it: not reached
		return GitIdentity{Source: err.Error()}
	}
	return GitIdentity{Name: name, Email: email, Source: "sandbox.git_identity"}
}

// hostGitConfig is one value host git resolves for the workspace ("" when
// git is missing, the value unset, or it is not one printable line). Only
// `git config --get` runs: it reads configuration and runs nothing of the
// workspace's (no hooks, no fsmonitor, no pager).
func hostGitConfig(ctx context.Context, workspace, key string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", workspace, "--no-pager", "config", "--get", key)
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	v := strings.TrimSuffix(string(out), "\n")
	if v == "" || len(v) > 256 || strings.ContainsAny(v, "<>\n\x00") || !utf8.ValidString(v) {
		return ""
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return ""
		}
	}
	return v
}

// gitEnv is what agentbox sets in the sandbox for git: the identity as
// author and committer (when there is one) and maintenance off.
func gitEnv(id GitIdentity) map[string]string {
	env := map[string]string{"GIT_CONFIG_COUNT": strconv.Itoa(len(gitConfigEnv))}
	for i, kv := range gitConfigEnv {
		env["GIT_CONFIG_KEY_"+strconv.Itoa(i)] = kv[0]
		env["GIT_CONFIG_VALUE_"+strconv.Itoa(i)] = kv[1]
	}
	if id.Name != "" && id.Email != "" {
		env["GIT_AUTHOR_NAME"], env["GIT_COMMITTER_NAME"] = id.Name, id.Name
		env["GIT_AUTHOR_EMAIL"], env["GIT_COMMITTER_EMAIL"] = id.Email, id.Email
	}
	return env
}
