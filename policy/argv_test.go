package policy

import "testing"

var argvPolicy = mustParse(`version: 1
commands:
  default: ask
  dynamic: deny
  allow: [ls, cat, env, xargs, find, timeout, nice, bash, python3, sort, git status, git log, git branch, busybox, cp, tar]
  ask: [git push]
  deny: [rm, {match: "rm -rf /"}]
files:
  read:  {allow: ["**"], deny: ["**/.env"]}
  write: {allow: ["**", "/tmp/**"], deny: [".git/config", ".git/hooks/**", ".envrc"]}
`)

func TestDecideArgv(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want Verdict
		rule string
	}{
		{[]string{"ls", "-la"}, Allow, "commands.allow[0]"},
		{[]string{"/usr/bin/ls"}, Allow, ""},
		{[]string{"/bin/rm", "-f", "x"}, Deny, "commands.deny[0]"},
		{[]string{"frob"}, Ask, "commands.default"},
		{[]string{"/usr/bin/git", "push"}, Ask, "commands.ask[0]"},
		{[]string{"git", "-C", "sub", "status"}, Allow, ""},
		{[]string{"git", "branch", "-D", "main"}, Ask, "commands.default"},
		{[]string{"git", "log", "--output=.git/config"}, Deny, "files.write.deny[0]"},
		{[]string{"env", "A=1", "rm", "x"}, Deny, "commands.deny[0]"},
		{[]string{"env", "LD_PRELOAD=/tmp/x.so", "ls"}, Deny, "always.assign"},
		{[]string{"env", "-C", ".git", "cp", "x", "config"}, Deny, "files.write.deny[0]"},
		{[]string{"timeout", "5", "nice", "rm", "x"}, Deny, "commands.deny[0]"},
		{[]string{"xargs", "-0", "rm"}, Deny, "commands.deny[0]"},
		{[]string{"find", ".", "-exec", "rm", "{}", ";"}, Deny, "commands.deny[0]"},
		{[]string{"find", ".", "-delete"}, Deny, "commands.deny[0]"},
		{[]string{"find", ".", "-fprint", ".envrc"}, Deny, "files.write.deny[2]"},
		{[]string{"busybox", "rm", "x"}, Deny, "commands.deny[0]"},
		{[]string{"sort", "-o", ".git/hooks/pre-commit", "x"}, Deny, "files.write.deny[1]"},
		{[]string{"sort", "-o/workspace/.git/config", "x"}, Deny, "files.write.deny[0]"},
		{[]string{"cp", "x", "/etc/passwd"}, Deny, "files.write.default"},
		{[]string{"cat", "/proc/self/cwd/.env"}, Deny, "files.read.deny[0]"},
		{[]string{"tar", "-xf", "a.tar", "-C", ".git/hooks"}, Deny, "files.write.deny[1]"},
		// Shells are not parsed: what they run is judged at its own exec.
		{[]string{"bash", "-c", "rm -rf x"}, Allow, ""},
		{[]string{"bash", "script.sh"}, Allow, ""},
		{[]string{"/usr/bin/env", "-S", "python3 -u"}, Allow, ""},
		{[]string{"python3", "-c", "import os; os.unlink('x')"}, Allow, ""},
		{[]string{"ls\u200b"}, Deny, "always.nonascii"},
		{[]string{}, Deny, "always.empty"},
	} {
		d := argvPolicy.DecideArgv(c.argv)
		if d.Verdict != c.want || c.rule != "" && d.Rule != c.rule {
			t.Errorf("%q: got %s by %s (%s), want %s by %s", c.argv, d.Verdict, d.Rule, d.Reason, c.want, c.rule)
		}
	}
}

func TestDecideExecUsesBothNames(t *testing.T) {
	// exec -a ls /bin/rm x: argv[0] says ls, the file is rm.
	if d := argvPolicy.DecideExec("/bin/rm", []string{"ls", "x"}); d.Verdict != Deny {
		t.Errorf("exec -a ls rm: %s (%s)", d.Verdict, d.Reason)
	}
	// busybox dispatches on argv[0].
	if d := argvPolicy.DecideExec("/bin/busybox", []string{"rm", "x"}); d.Verdict != Deny {
		t.Errorf("busybox as rm: %s (%s)", d.Verdict, d.Reason)
	}
	if d := argvPolicy.DecideExec("/usr/bin/ls", []string{"ls", "-l"}); d.Verdict != Allow {
		t.Errorf("ls: %s (%s)", d.Verdict, d.Reason)
	}
}

func BenchmarkDecideArgv(b *testing.B) {
	p := Default()
	argvs := [][]string{
		{"/usr/bin/git", "status", "--short"},
		{"/usr/bin/python3", "-m", "pytest", "-q", "tests/test_app.py"},
		{"/usr/bin/grep", "-rn", "TODO", "src"},
		{"/usr/bin/sort", "-o", "out.txt", "in.txt"},
		{"/usr/bin/env", "PYTHONUNBUFFERED=1", "python3", "x.py"},
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p.DecideArgv(argvs[i%len(argvs)])
		i++
	}
}
