package policy

import "testing"

// The built-in default is for real work (issue 14): ordinary commands an
// agent runs on the workspace do not ask; what acts outside it does.
func TestDefaultPolicyRealWork(t *testing.T) {
	p := Default()
	typical := []string{
		"ls -la",
		"cat README.md",
		"grep -rn 'TODO' src | head -20",
		"find . -name '*.py' -not -path './.venv/*'",
		"mkdir -p src/utils && touch src/utils/__init__.py",
		"mv old_name.py new_name.py",
		"cp config.example.json config.json",
		"sed -i 's/foo/bar/g' src/app.py",
		"awk -F, '{print $2}' data.csv | sort | uniq -c",
		"rm -rf build dist",
		"rm -f /tmp/out.txt",
		"git status --short",
		"git diff HEAD~1 -- src",
		"git add -A && git commit -m 'Fix the parser'",
		"git checkout -b feature/x",
		"git log --oneline -5",
		"node --version && npm test",
		"npm run build",
		"python3 -m pytest -q tests/",
		"go test ./... 2>&1 | tail -5",
		"make build",
		"id -u",
		"echo 'print(1)' > /tmp/t.py && python3 /tmp/t.py",
		"cat > notes.md <<'EOF'\n# Notes\nEOF",
		"wc -l $(git ls-files '*.go')",
		"for f in src/*.js; do node --check \"$f\"; done",
		"find . -name '*.pyc' -delete",
		"chmod +x scripts/run.sh && bash scripts/run.sh",
		"tar czf /tmp/src.tgz src",
		"export NODE_ENV=test; npm test",
		"pip install -r requirements.txt",
		"git push origin feature/x",
	}
	asks := 0
	for _, cmd := range typical {
		d := p.Decide(Action{Kind: Command, Command: cmd})
		switch d.Verdict {
		case Ask:
			asks++
			t.Logf("asks: %s (%s)", cmd, d.Reason)
		case Deny:
			t.Errorf("%q denied: %s", cmd, d.Reason)
		}
	}
	if asks > 2 {
		t.Errorf("%d of %d typical commands ask; at most 2 should", asks, len(typical))
	}
	// What acts outside the sandbox, and what destroys, still asks or is denied.
	for cmd, want := range map[string]Verdict{
		"git push":                        Ask,
		"git fetch origin":                Ask,
		"npm install left-pad":            Ask,
		"pip install requests":            Ask,
		"curl https://example.com":        Ask,
		"git config core.pager less":      Ask,
		"git reset --hard HEAD~3":         Ask,
		"git branch -D main":              Ask,
		"git grep -O'sh -c id' x":         Ask,
		"rm -rf /":                        Deny,
		"rm -r /":                         Deny,
		"rm -rf /workspace":               Deny,
		"rm -rf .":                        Deny,
		"find . -delete":                  Deny,
		"find / -delete":                  Deny,
		"sudo rm x":                       Deny,
		"cp /tmp/x .git/config":           Deny,
		"mv x .git/hooks/pre-commit":      Deny,
		"sed -i s/a/b/ .envrc":            Deny,
		"rm -rf .git":                     Deny,
		"echo '[core]' > sub/.git/config": Deny,
		"tee .vscode/tasks.json < x":      Deny,
		"cp x /etc/passwd":                Deny,
		"sort -o agentbox.yaml x":         Deny,
	} {
		if got := p.Decide(Action{Kind: Command, Command: cmd}); got.Verdict != want {
			t.Errorf("%s: got %s (%s), want %s", cmd, got.Verdict, got.Reason, want)
		}
	}
}

// The default write.deny protects what makes host tools run code from the
// workspace (issue 10 item 6).
func TestDefaultProtectsHostToolFiles(t *testing.T) {
	p := Default()
	for _, path := range []string{
		".git/config", ".git/config.worktree", ".git/hooks/pre-commit", ".git/hooks/x/y", ".git/commondir",
		".git/modules/lib/config", ".git/modules/lib/hooks/post-checkout", ".git/worktrees/wt/commondir",
		".git/info/attributes", ".git/objects/info/alternates", ".git", "sub/.git", "sub/.git/config",
		"a/b/.git/hooks/pre-commit", ".gitmodules", ".husky/pre-commit", ".pre-commit-config.yaml",
		".envrc", "sub/.envrc", ".env", ".env.local", ".mise.toml", ".vscode/tasks.json", ".vscode/settings.json",
		"proj.code-workspace", ".idea/workspace.xml", ".devcontainer/devcontainer.json", ".exrc", "agentbox.yaml",
		"/workspace/.git/config", "/workspace/./.git/hooks/x", "//workspace/.envrc", "/proc/self/cwd/.git/config",
		"/proc/1/root/workspace/agentbox.yaml",
	} {
		if d := p.Decide(Action{Kind: Write, Path: path}); d.Verdict != Deny {
			t.Errorf("write %s: %s (%s)", path, d.Verdict, d.Reason)
		}
	}
	for _, path := range []string{"src/main.go", "Makefile", "package.json", ".git/index", ".git/objects/ab/cdef",
		".git/refs/heads/main", ".git/COMMIT_EDITMSG", ".gitignore", "README.md", ".vscode/extensions.json", "/tmp/x"} {
		if d := p.Decide(Action{Kind: Write, Path: path}); d.Verdict != Allow {
			t.Errorf("write %s: %s (%s)", path, d.Verdict, d.Reason)
		}
	}
}
