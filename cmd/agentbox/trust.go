package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

// A ./agentbox.yaml found in the current directory comes with the
// directory, which may be someone else's: when it is looser than the
// built-in default it is used only once the user has trusted it on a
// terminal (remembered per absolute path and sha256 in the state
// directory), or when it is named with --policy.

// trustFile is the list of trusted policies in the state directory.
const trustFile = "trusted-policies.json"

// actingCommands are the commands that run something under the policy;
// the others (policy explain, audit replay) only read it.
var actingCommands = map[string]bool{"run": true, "exec": true, "batch": true}

// checkTrust refuses a looser ./agentbox.yaml that was not named with
// --policy and is not trusted, asking on a terminal.
func checkTrust(c *cli.Context, p *policy.Policy) error {
	if c.String("policy") != "" || p.Path == "" || !actingCommands[c.Command.Name] {
		return nil
	}
	why := looserThan(p, policy.Default())
	if len(why) == 0 {
		return nil
	}
	abs, err := filepath.Abs(p.Path)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("policy %s: %w", p.Path, err))
	}
	store, err := trustStorePath()
	if err != nil {
		return exitWith(exitUsage, err)
	}
	trusted := readTrust(store)
	if trusted[abs] == p.SHA256 {
		return nil
	}
	summary := fmt.Sprintf("%s is looser than the built-in default: %s", abs, strings.Join(why, "; "))
	if !isTerminal(os.Stdin) || !isTerminal(os.Stderr) {
		return exitWith(exitUsage, fmt.Errorf("%s; it came with the current directory and is not trusted: run on a terminal to trust it once, or name it with --policy %s", summary, p.Path))
	}
	fmt.Fprintf(c.App.ErrWriter, "%s.\nTrust this file (sha256 %s) and use it? [y/N] ", summary, p.SHA256[:12])
	line, _ := bufio.NewReader(c.App.Reader).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return exitWith(exitUsage, fmt.Errorf("%s was not trusted; nothing ran (name another with --policy)", abs))
	}
	trusted[abs] = p.SHA256
	if err := writeTrust(store, trusted); err != nil {
		return exitWith(exitUsage, err)
	}
	fmt.Fprintf(c.App.ErrWriter, "trusted %s (recorded in %s)\n", abs, store)
	return nil
}

// looserThan lists how p lets through more than def: the network, host
// variables passed in, and probe commands and file accesses that p decides
// more leniently.
func looserThan(p, def *policy.Policy) []string {
	var why []string
	if p.Sandbox.Network != "" && p.Sandbox.Network != sandbox.NetworkNone && p.Sandbox.Network != def.Sandbox.Network {
		why = append(why, "network: "+string(p.Sandbox.Network))
	}
	known := map[string]bool{}
	for _, e := range def.Sandbox.Env {
		known[e] = true
	}
	for _, e := range p.Sandbox.Env {
		if !known[e] {
			why = append(why, "passes the host variable "+e)
		}
	}
	probe := func(kind, show string, a policy.Action) {
		if got, want := p.Decide(a).Verdict, def.Decide(a).Verdict; got < want {
			why = append(why, fmt.Sprintf("%s %s: %s (default: %s)", kind, show, got, want))
		}
	}
	for _, cmd := range trustProbeCommands {
		probe("command", "`"+cmd+"`", policy.Action{Kind: policy.Command, Command: cmd})
	}
	for _, path := range trustProbeReads {
		probe("read", path, policy.Action{Kind: policy.Read, Path: path})
	}
	for _, path := range trustProbeWrites {
		probe("write", path, policy.Action{Kind: policy.Write, Path: path})
	}
	return why
}

var (
	trustProbeCommands = []string{
		"a-command-no-rule-names", "$CMD", "git push", "curl https://example.com", "wget https://example.com",
		"pip install requests", "npm install left-pad", "apt-get install curl", "sudo true", "su -", "ssh host",
		"nc -l 4444", "docker ps", "rm -rf /", "chmod -R 777 /", "dd if=/dev/zero of=/dev/sda", "mount /dev/sda /mnt",
		"eval ls", "bash -c ls", "cat /etc/shadow",
	}
	trustProbeReads  = []string{".env", ".git/config", "secrets/key.pem", ".ssh/id_rsa"}
	trustProbeWrites = []string{".git/hooks/pre-commit", ".git/config", "agentbox.yaml", ".env", ".github/workflows/ci.yml"}
)

func trustStorePath() (string, error) {
	p, err := audit.DefaultPath()
	if err != nil {
		return "", fmt.Errorf("no state directory for trusted policies: %w", err)
	}
	return filepath.Join(filepath.Dir(p), trustFile), nil
}

func readTrust(path string) map[string]string {
	m := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

func writeTrust(path string, m map[string]string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("record the trusted policy: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the trusted policy: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("record the trusted policy: %w", err), os.Remove(tmp))
	}
	return nil
}
