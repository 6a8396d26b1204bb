package workspace

// A line diff (Myers' O(ND) algorithm), for the unified diffs of
// `agentbox changes` and batch's changes.patch. No maintained, importable
// Go diff library is a field standard (go-difflib and gotextdiff are
// archived; golang.org/x/tools' diff is internal), so it lives here.

// maxEdits bounds the edit distance searched (memory grows with its
// square); beyond, a file's diff is one hunk replacing everything.
const maxEdits = 2000

// edit is one line of a line diff: ' ' kept, '-' removed, '+' added.
type edit struct {
	op   byte
	line string
}

// diffLines returns the edits turning a into b: a shortest edit script,
// or, past maxEdits, all of a removed and all of b added.
func diffLines(a, b []string) []edit {
	n, m := len(a), len(b)
	max := n + m
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	for d := 0; d <= max; d++ {
		if d > maxEdits {
			return replaceAll(a, b)
		}
		snap := make([]int, 2*d+1)
		copy(snap, v[off-d:off+d+1])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b)
			}
		}
	}
	return replaceAll(a, b)
}

func replaceAll(a, b []string) []edit {
	out := make([]edit, 0, len(a)+len(b))
	for _, l := range a {
		out = append(out, edit{'-', l})
	}
	for _, l := range b {
		out = append(out, edit{'+', l})
	}
	return out
}

// backtrack walks the saved frontiers back from the end to the start.
func backtrack(trace [][]int, a, b []string) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := len(trace) - 1; d > 0; d-- {
		snap := trace[d] // the frontier before step d, index k+d
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && snap[k-1+d] < snap[k+1+d]) {
			prevK = k + 1
		}
		prevX := snap[prevK+d]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, edit{' ', a[x-1]})
			x, y = x-1, y-1
		}
		if x == prevX {
			rev = append(rev, edit{'+', b[prevY]})
		} else {
			rev = append(rev, edit{'-', a[prevX]})
		}
		x, y = prevX, prevY
	}
	for x > 0 && y > 0 {
		rev = append(rev, edit{' ', a[x-1]})
		x, y = x-1, y-1
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
