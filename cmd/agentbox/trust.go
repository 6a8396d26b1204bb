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
// the others (policy explain, audit replay) only read it. A fork runs
// under its session's policy (unchanged since, by sha256) or --policy; a
// devcontainer set-up under the policy of the command that starts it.
var actingCommands = map[string]bool{"run": true, "exec": true, "batch": true, "mcp": true, "fork": true}

// noPrompt are the acting commands that never ask: mcp's stdin is the
// protocol, not a person.
var noPrompt = map[string]bool{"mcp": true}

// checkTrust refuses a looser ./agentbox.yaml that was not named with
// --policy and is not trusted, asking on a terminal.
func checkTrust(c *cli.Context, p *policy.Policy) error {
	if c.String("policy") != "" || p.Path == "" || !actingCommands[c.Command.Name] {
		return nil
	}
	why := looserThan(p, policy.Default())
	host := hostSources(p)
	if len(why) == 0 && len(host) == 0 {
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
	list := ""
	if len(why) > 0 {
		list = "\n  " + strings.Join(why, "\n  ") + "\n"
	}
	if len(host) > 0 {
		list += "On this host, when a session starts, it would:\n  " + strings.Join(host, "\n  ") + "\n"
	}
	if noPrompt[c.Command.Name] || !isTerminal(os.Stdin) || !isTerminal(os.Stderr) {
		return exitWith(exitUsage, fmt.Errorf("%s came with the current directory and is looser than the built-in default, and it is not trusted: name it with --policy %s, or trust it once on a terminal (agentbox exec -- true in that directory). What is looser:%s", abs, p.Path, list))
	}
	fmt.Fprintf(c.App.ErrWriter, "%s is looser than the built-in default:%sTrust this file (sha256 %s) and use it? [y/N] ", abs, list, p.SHA256[:12])
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

// looserThan lists how p lets through more than def, field by field, from
// the policies' structure (policy.Within): every rule of def that p does
// not keep, every field that is looser, and every part that could not be
// proven (fail closed), each with a concrete example where there is one.
func looserThan(p, def *policy.Policy) []string {
	return looserLines(policy.Within(p, def, nil), p.Path)
}

// looserLines are a Within report's findings, one line each, at most 8
// and a pointer to the rest.
func looserLines(r policy.Report, path string) []string {
	var why []string
	for _, f := range r.Looser {
		why = append(why, policy.Visible(f.String()))
	}
	for _, f := range r.Unproven {
		why = append(why, "not proven: "+policy.Visible(f.String()))
	}
	const show = 8
	if len(why) > show {
		why = append(why[:show:show], fmt.Sprintf("and %d more (see: agentbox policy check %s --within default)", len(why)-show, path))
	}
	return why
}

// hostSources names what the policy's secrets would run or read on this
// host, outside the sandbox, when a session starts (secrets.NAME.from
// command: and file:), every one: the file comes with the directory, and
// these act on the host before any rule applies. They alone make a
// policy need trust.
func hostSources(p *policy.Policy) []string {
	var out []string
	for _, s := range p.Secrets() {
		kind, arg, _ := strings.Cut(s.From, ":")
		switch kind {
		case "command":
			out = append(out, fmt.Sprintf("run the command %s as you (secrets.%s.from: command:)", policy.Visible(arg), policy.Visible(s.Name)))
		case "file":
			out = append(out, fmt.Sprintf("read the file %s (secrets.%s.from: file:)", policy.Visible(arg), policy.Visible(s.Name)))
		}
	}
	return out
}

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
