package policy

import "encoding/binary"

// searchLimit bounds the product states one search visits; a search that
// reaches it is incomplete and its comparison stays unproven.
const searchLimit = 200000

// findString looks for a shortest string that every automaton of pos
// accepts and neg (nil: none) does not. It returns the string and whether
// one exists; complete is false when the search stopped at its limit
// without an answer (nothing is proven then).
func findString(pos []*nfa, neg *nfa) (witness string, ok, complete bool) {
	all := append(append([]*nfa(nil), pos...), neg)
	if neg == nil {
		all = all[:len(pos)]
	}
	alpha := alphabet(all)
	seen := make([][]bool, len(all))
	start := make([][]int32, len(all))
	for i, n := range all {
		seen[i] = make([]bool, len(n.edges))
		start[i] = n.closure(n.start, seen[i])
		if i < len(pos) && len(start[i]) == 0 {
			return "", false, true
		}
	}
	type node struct {
		sets   [][]int32
		parent int32
		b      byte
	}
	nodes := []node{{sets: start, parent: -1}}
	index := map[string]bool{key(start): true}
	accept := func(sets [][]int32) bool {
		for i := range pos {
			if !all[i].accepting(sets[i]) {
				return false
			}
		}
		return neg == nil || !neg.accepting(sets[len(pos)])
	}
	for at := 0; at < len(nodes); at++ {
		cur := nodes[at].sets
		if accept(cur) {
			var b []byte
			for i := int32(at); nodes[i].parent >= 0; i = nodes[i].parent {
				b = append(b, nodes[i].b)
			}
			for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
				b[i], b[j] = b[j], b[i]
			}
			return string(b), true, true
		}
		if len(nodes) > searchLimit {
			return "", false, false
		}
	next:
		for _, c := range alpha {
			sets := make([][]int32, len(all))
			for i, n := range all {
				sets[i] = n.step(cur[i], c, seen[i])
				if i < len(pos) && len(sets[i]) == 0 {
					continue next
				}
			}
			k := key(sets)
			if index[k] {
				continue
			}
			index[k] = true
			nodes = append(nodes, node{sets: sets, parent: int32(at), b: c})
		}
	}
	return "", false, true
}

func key(sets [][]int32) string {
	var b []byte
	for _, s := range sets {
		b = binary.AppendUvarint(b, uint64(len(s)))
		for _, q := range s {
			b = binary.AppendUvarint(b, uint64(q))
		}
	}
	return string(b)
}

// alphabet is every byte the automata tell apart, plus one byte none of
// them names (standing for all the others).
func alphabet(all []*nfa) []byte {
	var used [256]bool
	for _, n := range all {
		for _, es := range n.edges {
			for _, e := range es {
				if !e.any {
					used[e.c] = true
				}
				for i := 0; i < len(e.except); i++ {
					used[e.except[i]] = true
				}
			}
		}
	}
	var out []byte
	for c := 0; c < 256; c++ {
		if used[c] {
			out = append(out, byte(c))
		}
	}
	for _, c := range []byte("xyzqjkvwabcdefghilmnoprstu0123456789") {
		if !used[c] {
			return append(out, c)
		}
	}
	return out
}
