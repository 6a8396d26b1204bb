package policy

import "testing"

// BenchmarkWithinDefault is the cost of the trust check for a local
// ./agentbox.yaml that is a copy of the default: the whole proof and
// counterexample search.
func BenchmarkWithinDefault(b *testing.B) {
	def := Default()
	for b.Loop() {
		if r := Within(def, def, nil); !r.Holds() {
			b.Fatal("the default is not within itself")
		}
	}
}

// BenchmarkWithinLooser is the cost when the proof fails on many rules
// (every write-deny entry dropped).
func BenchmarkWithinLooser(b *testing.B) {
	def := Default()
	loose := parseT(b, "loose.yaml", editDefault(b, "    deny:\n      - \".git/hooks/**\"", "    deny:\n      - \".git/hooks/x\""))
	for b.Loop() {
		if r := Within(loose, def, nil); r.Holds() {
			b.Fatal("holds")
		}
	}
}
