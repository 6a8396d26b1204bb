package policy

import (
	"strings"
	"testing"
)

func BenchmarkDecideOneLine(b *testing.B) {
	p := Default()
	a := Action{Kind: Command, Command: `find . -name '*.go' | xargs grep -n "TODO" | sort | head -20 > todo.txt`}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(a)
	}
}

func BenchmarkDecide200Lines(b *testing.B) {
	p := Default()
	lines := []string{
		`cd src && ls -la`,
		`for f in *.go; do wc -l "$f"; done`,
		`if [ -f go.mod ]; then go test ./... 2>&1 | tail -5; fi`,
		`git status --short | grep -v '^??' || true`,
		`echo "$(date) building" >> build.log`,
		`python3 - <<'EOF'
print("hi")
EOF`,
		`find . -type f -name '*.py' -exec grep -l import {} +`,
		`export GOFLAGS=-mod=mod`,
	}
	var sb strings.Builder
	for i := 0; sb.Len() == 0 || strings.Count(sb.String(), "\n") < 200; i++ {
		sb.WriteString(lines[i%len(lines)])
		sb.WriteByte('\n')
	}
	a := Action{Kind: Command, Command: sb.String()}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(a)
	}
}

func BenchmarkDecideFile(b *testing.B) {
	p := Default()
	a := Action{Kind: Read, Path: "/workspace/src/pkg/handler/server.go"}
	for b.Loop() {
		p.Decide(a)
	}
}
