package policy

import "testing"

// A program run by its path in a place the session writes is judged by
// commands.unknown_binaries up front, as the executor judges one whose
// content is not in the image; a program known by content is judged under
// each of its names.
func TestUnknownBinaries(t *testing.T) {
	strict, err := Parse("strict.yaml", []byte("version: 1\ncommands:\n  default: allow\n  unknown_binaries: deny\n  allow: [cat, head]\n  deny: [python3]\n"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := Parse("def.yaml", []byte("version: 1\ncommands:\n  default: ask\n  allow: [python3, cat]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		argv  []string
		names []string
		want  Verdict
	}{
		{[]string{"python3", "-c", "x"}, []string{"python3.11", "python3"}, Allow},
		{[]string{"./mytool", "-c", "x"}, []string{"python3.11", "python3"}, Allow},
		{[]string{"./cat", "x"}, []string{"perl"}, Ask},
	} {
		if d := def.DecideProgram("", c.argv, c.names, false); d.Verdict != c.want {
			t.Errorf("default-ask DecideProgram %q %q: %v %s, want %v", c.argv, c.names, d.Verdict, d.Rule, c.want)
		}
	}
	for cmd, want := range map[string]Verdict{
		"./cat x": Deny, "sub/tool": Deny, "/workspace/bin/x": Deny, "/tmp/x": Deny, "/var/tmp/../tmp/x": Deny,
		"cat x": Allow, "/usr/bin/cat x": Allow, "/usr/local/bin/tool": Allow,
	} {
		if d := strict.Decide(Action{Kind: Command, Command: cmd}); d.Verdict != want {
			t.Errorf("strict %q: %v (%s), want %v", cmd, d.Verdict, d.Rule, want)
		}
	}
	if d := Default().Decide(Action{Kind: Command, Command: "./configure"}); d.Verdict == Deny || Default().UnknownBinaries() != Allow {
		t.Errorf("default policy: %v %s, unknown_binaries %v", d.Verdict, d.Rule, Default().UnknownBinaries())
	}
	for _, c := range []struct {
		argv    []string
		names   []string
		unknown bool
		want    Verdict
		rule    string
	}{
		{[]string{"./cat", "-c", "x"}, []string{"python3.11", "python3"}, false, Deny, "commands.deny[0]"},
		{[]string{"./cat", "x"}, []string{"cat"}, false, Allow, "commands.allow[0]"},
		{[]string{"./cat", "x"}, nil, true, Deny, "commands.unknown_binaries"},
		// python3 itself, by a name no rule names: judged as python3
		{[]string{"python3", "-c", "x"}, []string{"python3.11", "python3"}, false, Deny, "commands.deny[0]"},
		// an image program no rule names, copied under an allowed name: the default, not cat's allow
		{[]string{"./cat", "x"}, []string{"perl"}, false, Allow, "commands.default"},
		// called by a denied name (exec -a): still denied
		{[]string{"python3", "x"}, []string{"cat"}, false, Deny, "commands.deny[0]"},
	} {
		if d := strict.DecideProgram("", c.argv, c.names, c.unknown); d.Verdict != c.want || d.Rule != c.rule {
			t.Errorf("DecideProgram %q %q unknown=%v: %v %s, want %v %s", c.argv, c.names, c.unknown, d.Verdict, d.Rule, c.want, c.rule)
		}
	}
	d := Decision{Parts: []Part{{Argv: []string{"/usr/bin/ls"}}, {Argv: []string{"ls", "-l"}}, {Argv: []string{}}, {Argv: []string{"./gen.sh"}}}}
	if got := d.Programs(); len(got) != 2 || got[0] != "ls" || got[1] != "gen.sh" {
		t.Errorf("Programs: %q", got)
	}
}
