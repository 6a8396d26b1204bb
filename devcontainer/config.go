package devcontainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ErrRefused marks a devcontainer.json agentbox will not run.
var ErrRefused = errors.New("devcontainer refused")

// Config is what agentbox takes from a devcontainer.json.
type Config struct {
	Path  string            // the file read
	Image string            // "image", or "" when Build is set
	Build *Build            // "build"
	Env   map[string]string // "containerEnv"
	User  string            // "uid:gid" from remoteUser/containerUser, or ""
	// Commands are the lifecycle commands in the order the spec runs them
	// (onCreate, updateContent, postCreate, postStart, postAttach), each a
	// bash script run as an ordinary tool call.
	Commands []Command
}

// Command is one lifecycle command.
type Command struct {
	Field  string // e.g. "postCreateCommand" or "postCreateCommand.install"
	Script string
}

// Build is a Dockerfile build, paths absolute on the host.
type Build struct {
	Dockerfile string
	Context    string
	Args       map[string]string
	Target     string
}

// refused names the fields agentbox will not honour and why.
var refused = map[string]string{
	"features":                    "features install software with root at build time from registries; put what you need in a Dockerfile (build.dockerfile)",
	"runArgs":                     "docker run arguments would bypass the sandbox's hardening",
	"privileged":                  "a privileged container has no isolation",
	"capAdd":                      "the sandbox runs with no capabilities",
	"securityOpt":                 "the sandbox's seccomp and no_new_privs are fixed",
	"init":                        "the sandbox has its own init (the executor)",
	"mounts":                      "only the workspace is mounted",
	"workspaceMount":              "only the workspace is mounted, at /workspace",
	"forwardPorts":                "the sandbox publishes no ports",
	"appPort":                     "the sandbox publishes no ports",
	"dockerComposeFile":           "compose services are not supported",
	"service":                     "compose services are not supported",
	"runServices":                 "compose services are not supported",
	"initializeCommand":           "it runs on the host, outside the sandbox",
	"hostRequirements":            "host requirements (GPUs, sizes) are not mapped; use the policy's sandbox limits",
	"remoteEnv":                   "use containerEnv",
	"gpu":                         "GPUs are not passed into the sandbox",
	"overrideFeatureInstallOrder": "features are not supported",
}

// ignored are fields that change nothing agentbox does.
var ignored = []string{"$schema", "name", "customizations", "workspaceFolder", "shutdownAction", "overrideCommand",
	"updateRemoteUserUID", "userEnvProbe", "waitFor", "portsAttributes", "otherPortsAttributes"}

var lifecycle = []string{"onCreateCommand", "updateContentCommand", "postCreateCommand", "postStartCommand", "postAttachCommand"}

// Find returns the devcontainer.json of a workspace:
// .devcontainer/devcontainer.json, else .devcontainer.json.
func Find(workspace string) (string, error) {
	for _, p := range []string{filepath.Join(workspace, ".devcontainer", "devcontainer.json"), filepath.Join(workspace, ".devcontainer.json")} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no .devcontainer/devcontainer.json or .devcontainer.json in %s", ErrRefused, workspace)
}

// Load reads and checks the devcontainer.json of workspace.
func Load(workspace string) (*Config, error) {
	p, err := Find(workspace)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	c, err := Parse(data, filepath.Dir(p), workspace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	c.Path = p
	return c, nil
}

// Parse checks a devcontainer.json whose directory is dir, inside workspace.
func Parse(data []byte, dir, workspace string) (*Config, error) {
	plain, err := StripJSONC(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON with comments: %w", ErrRefused, err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(plain))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %w", ErrRefused, err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c := &Config{Env: map[string]string{}}
	for _, k := range keys {
		if why, ok := refused[k]; ok {
			return nil, refuse(k, why)
		}
		if slices.Contains(ignored, k) || slices.Contains(lifecycle, k) {
			continue
		}
		switch k {
		case "image", "build", "containerEnv", "remoteUser", "containerUser":
		default:
			return nil, refuse(k, "agentbox does not support it")
		}
	}
	if v, ok := raw["image"]; ok {
		if err := json.Unmarshal(v, &c.Image); err != nil || c.Image == "" || strings.Contains(c.Image, "${") {
			return nil, refuse("image", "want an image reference without variables")
		}
	}
	if v, ok := raw["build"]; ok {
		if c.Build, err = parseBuild(v, dir, workspace); err != nil {
			return nil, err
		}
	}
	if (c.Image == "") == (c.Build == nil) {
		return nil, refuse("image", "want exactly one of image and build.dockerfile")
	}
	if v, ok := raw["containerEnv"]; ok {
		if err := json.Unmarshal(v, &c.Env); err != nil {
			return nil, refuse("containerEnv", "want an object of strings")
		}
		for name, val := range c.Env {
			if !envName.MatchString(name) {
				return nil, refuse("containerEnv."+name, "not a variable name")
			}
			if c.Env[name], err = expand(val); err != nil {
				return nil, refuse("containerEnv."+name, err.Error())
			}
		}
	}
	for _, f := range []string{"containerUser", "remoteUser"} { // remoteUser wins, as in the spec
		v, ok := raw[f]
		if !ok {
			continue
		}
		var u string
		if err := json.Unmarshal(v, &u); err != nil {
			return nil, refuse(f, "want a string")
		}
		if c.User, err = numericUser(u); err != nil {
			return nil, refuse(f, err.Error())
		}
	}
	for _, f := range lifecycle {
		if v, ok := raw[f]; ok {
			cmds, err := parseCommand(f, v)
			if err != nil {
				return nil, err
			}
			c.Commands = append(c.Commands, cmds...)
		}
	}
	return c, nil
}

func refuse(field, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrRefused, field, why)
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand replaces the variables that mean something inside the sandbox and
// refuses the others: ${localEnv:...} would read the host's environment.
func expand(s string) (string, error) {
	s = strings.ReplaceAll(s, "${containerWorkspaceFolder}", "/workspace")
	if i := strings.Index(s, "${"); i >= 0 {
		return "", fmt.Errorf("variable %q is not supported (nothing of the host's environment enters the sandbox)", s[i:min(len(s), i+40)])
	}
	return s, nil
}

// numericUser maps "uid" or "uid:gid" to "uid:gid"; names cannot be
// resolved before the image runs, and root is refused.
func numericUser(u string) (string, error) {
	uid, gid, hasGid := strings.Cut(u, ":")
	if !hasGid {
		gid = uid
	}
	for _, n := range []string{uid, gid} {
		v, err := strconv.ParseUint(n, 10, 31)
		if err != nil {
			return "", fmt.Errorf("%q is not a numeric uid[:gid]; agentbox does not resolve user names (set sandbox.user in the policy)", u)
		}
		if v == 0 {
			return "", fmt.Errorf("%q is root; the sandbox never runs as root", u)
		}
	}
	return uid + ":" + gid, nil
}

// parseCommand reads a lifecycle command: a string (a shell script), an
// array (argv) or an object of named commands (run one after another).
func parseCommand(field string, v json.RawMessage) ([]Command, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		return []Command{{Field: field, Script: s}}, nil
	}
	var argv []string
	if json.Unmarshal(v, &argv) == nil {
		if len(argv) == 0 {
			return nil, nil
		}
		q := make([]string, len(argv))
		for i, a := range argv {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		return []Command{{Field: field, Script: strings.Join(q, " ")}}, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil {
		return nil, refuse(field, "want a string, an array or an object of commands")
	}
	names := make([]string, 0, len(obj))
	for n := range obj {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Command
	for _, n := range names {
		var sub json.RawMessage = obj[n]
		var probe map[string]json.RawMessage
		if json.Unmarshal(sub, &probe) == nil {
			return nil, refuse(field+"."+n, "want a string or an array")
		}
		cmds, err := parseCommand(field+"."+n, sub)
		if err != nil {
			return nil, err
		}
		out = append(out, cmds...)
	}
	return out, nil
}
