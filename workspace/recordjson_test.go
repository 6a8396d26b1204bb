package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/fstree"
)

// The staging records are encoded byte for byte as encoding/json encodes
// them: whatever reads them (LoadCheckpoints, Pending, OpenStage, older
// agentbox) reads the same.
func TestRecordJSONIsEncodingJSON(t *testing.T) {
	odd := []string{"a.txt", "dir/b c", `q"uote\back`, "<html>&", "é/ü", "tab\there", "nl\n", "\x7f", "\u2028", string([]byte{0xff, 'x'}), ""}
	stamp := func(i int) fstree.Stamp {
		return fstree.Stamp{Ino: uint64(i) << 40, Dev: 2049, Mode: 0o100644 | uint32(i%3)<<9, Size: int64(i) * 1024,
			MTime: -int64(i), CTime: 1764691200123456789 + int64(i), Rdev: uint64(i % 2)}
	}
	var cps []any
	var sts []any
	for n := range 4 {
		cp := Checkpoint{Seq: n, CallID: odd[n], Time: time.Date(2026, 12, 2, 16, 0, n, n*1001, time.UTC), Kept: n == 2,
			After: map[string]fstree.Stamp{}, BeforeMode: map[string]uint32{}}
		st := stageState{Since: int64(n) * 7, Seq: n, HeldBytes: int64(n % 2), Promoted: map[string]promotedEntry{}, Kept: map[string]promotedEntry{}}
		if n == 0 { // nothing: null changes, no maps
			cp.Changes, cp.After, cp.BeforeMode, st.Promoted, st.Kept = nil, nil, nil, nil, nil
		}
		for i, p := range odd[:n*len(odd)/3] { // up to every odd string
			p = fmt.Sprint(p, i)
			c := StagedChange{Path: p, Change: odd[(i+1)%len(odd)], Type: TypeFile, Bytes: int64(i - 1), SetIDCut: i%2 == 0}
			if i%3 == 0 {
				c.Held, c.Why = HazardGitRepo, odd[(i+2)%len(odd)]
			} else {
				c.Before, c.After = "", fmt.Sprintf("%064x", i)
			}
			cp.Changes = append(cp.Changes, c)
			cp.After[p] = stamp(i)
			cp.BeforeMode[p] = uint32(i)
			st.Promoted[p] = promotedEntry{Upper: stamp(i), Lower: stamp(i + 1)}
			if i%2 == 1 {
				st.Kept[p] = promotedEntry{Lower: stamp(i)}
			}
			if st.GitDirs == nil {
				st.GitDirs = map[string]bool{}
			}
			st.GitDirs[p] = i%2 == 0
		}
		cps = append(cps, cp, &cp)
		sts = append(sts, st, &st)
	}
	for _, v := range append(cps, sts...) {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalRecord(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%T:\n got %s\nwant %s", v, got, want)
		}
	}
}
