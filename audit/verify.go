package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Damage kinds (Damage.Kind).
const (
	DamageEdited     = "edited"      // the line's bytes changed after the next line was written
	DamageInserted   = "inserted"    // the line is not part of the original chain
	DamageDeleted    = "deleted"     // records are missing before the line
	DamageReordered  = "reordered"   // records are out of order
	DamageTruncated  = "truncated"   // an incomplete record (crash mid-write, or a cut file)
	DamageBadMAC     = "bad_mac"     // the MAC does not match (forged or rewritten; or wrong key)
	DamageMissingMAC = "missing_mac" // a key was given but the line has no MAC
	DamageMalformed  = "malformed"   // not a record at all
	DamageTailCut    = "tail_cut"    // the expected head is gone: records were cut from the end
	DamageCheckpoint = "checkpoint"  // the log no longer extends a checkpoint taken earlier
	// DamageUnconfirmed: without a key, a line whose successor is missing
	// (deleted) has nothing vouching for its content: it may have been
	// edited too, which the hash chain alone cannot tell.
	DamageUnconfirmed = "unconfirmed"
)

var damageText = map[string]string{
	DamageEdited:      "record edited",
	DamageInserted:    "record inserted",
	DamageDeleted:     "record(s) deleted",
	DamageReordered:   "records reordered",
	DamageTruncated:   "record truncated",
	DamageBadMAC:      "MAC mismatch",
	DamageMissingMAC:  "MAC missing",
	DamageMalformed:   "malformed record",
	DamageTailCut:     "records cut from the end",
	DamageCheckpoint:  "checkpoint not extended",
	DamageUnconfirmed: "record unconfirmed",
}

// maxDamage bounds VerifyReport.Damage; DamageCount counts them all.
const maxDamage = 10000

// Damage is one problem Verify found.
type Damage struct {
	Line    int    `json:"line"`              // 1-based; for tail_cut the line after the last
	Through int    `json:"through,omitempty"` // last line of a run of the same MAC damage
	Kind    string `json:"kind"`
	Detail  string `json:"detail"`
}

func (d Damage) String() string {
	lines := fmt.Sprintf("line %d", d.Line)
	if d.Through > d.Line {
		lines = fmt.Sprintf("line %d to line %d", d.Line, d.Through)
	}
	return fmt.Sprintf("%s: %s (%s)", lines, damageText[d.Kind], d.Detail)
}

// VerifyReport is the result of Verify.
type VerifyReport struct {
	Records     int      `json:"records"`  // lines read
	Sessions    int      `json:"sessions"` // distinct session ids
	Head        string   `json:"head"`     // sha256 hex of the last line ("" for an empty log)
	Intact      bool     `json:"intact"`
	First       *Damage  `json:"first,omitempty"`   // the earliest damage
	Damage      []Damage `json:"damage,omitempty"`  // every damaged line, in line order (at most maxDamage)
	DamageCount int      `json:"damage_count"`      // entries found, also beyond the list's bound
	Unended     []string `json:"unended,omitempty"` // sessions with a session_start and no session_end
	KeyUsed     bool     `json:"key_used"`          // MACs were checked
	MACs        int      `json:"macs"`              // records that carry a mac
	// Unproven says what this verification cannot prove (without a key: a
	// complete rewrite of the file).
	Unproven string `json:"unproven,omitempty"`
	// Checkpoint reports on a checkpoint given to VerifyWith.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// unprovenNoKey is VerifyReport.Unproven when no key was given.
const unprovenNoKey = "without a key the hash chain cannot show a complete rewrite of the file (every hash recomputed) nor records cut from its end; keep the head elsewhere (or a checkpoint: agentbox audit checkpoint) and pass it back with --expect-head or --checkpoint"

// String renders the report for a terminal, e.g.
//
//	ok: 1532 records, 41 sessions, chain intact (head 9c1e…)
//	line 208: record edited (hash chain broken: ...)
func (r VerifyReport) String() string {
	var b strings.Builder
	if r.Intact {
		checks := "chain intact"
		if r.KeyUsed {
			checks += ", MACs valid"
		}
		fmt.Fprintf(&b, "ok: %s, %s, %s (head %s)\n", plural(r.Records, "record"), plural(r.Sessions, "session"), checks, headOrEmpty(r.Head))
	} else {
		for _, d := range r.Damage {
			fmt.Fprintf(&b, "%s\n", d)
		}
		if r.DamageCount > len(r.Damage) {
			fmt.Fprintf(&b, "… and %d more damaged lines (not listed)\n", r.DamageCount-len(r.Damage))
		}
		fmt.Fprintf(&b, "DAMAGED: %s, %s, %s (head %s)\n", plural(r.DamageCount, "problem"), plural(r.Records, "record"), plural(r.Sessions, "session"), headOrEmpty(r.Head))
	}
	if r.Checkpoint != "" {
		fmt.Fprintf(&b, "checkpoint: %s\n", r.Checkpoint)
	}
	if !r.KeyUsed && r.MACs > 0 {
		fmt.Fprintf(&b, "note: %d records carry a MAC but no key was given; only the hash chain was checked (set %s)\n", r.MACs, KeyEnv)
	}
	if r.Unproven != "" {
		fmt.Fprintf(&b, "not proven: %s\n", r.Unproven)
		if r.Head != "" {
			fmt.Fprintf(&b, "head: %s (line %d; keep it elsewhere)\n", r.Head, r.Records)
		}
	}
	for _, s := range r.Unended {
		fmt.Fprintf(&b, "session %s never ended (crash, kill, or records cut from the end)\n", s)
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func headOrEmpty(h string) string {
	if h == "" {
		return "none: empty log"
	}
	return h
}

// VerifyOptions are the inputs of VerifyWith besides the log.
type VerifyOptions struct {
	Key []byte // HMAC key; nil checks the chain only
	// ExpectHead is a head printed by an earlier Verify (or at least its
	// first 8 hex digits): no line having it is tail_cut.
	ExpectHead string
	// Checkpoint, when set, must still be extended by the log: its line
	// still has its hash (else "checkpoint") and exists (else tail_cut).
	Checkpoint *Checkpoint
}

// Verify is VerifyWith with a key and an expected head.
func Verify(r io.Reader, key []byte, expectHead string) (VerifyReport, error) {
	return VerifyWith(r, VerifyOptions{Key: key, ExpectHead: expectHead})
}

// VerifyWith reads a whole log and checks that every line's prev is the
// sha256 of the line before it (GenesisPrev for the first), that seqs are
// consecutive and, with a key, every MAC. It names every damaged line and
// its kind, resynchronising after damage (the chain continues from the next
// line that chains), lists sessions that never ended and checks
// opts.ExpectHead and opts.Checkpoint. The error is for read failures and
// bad options only; damage is in the report.
func VerifyWith(r io.Reader, opts VerifyOptions) (VerifyReport, error) {
	v := &verifier{sess: map[string]uint8{}, missIdx: -1}
	if len(opts.Key) > 0 {
		v.mac = hmac.New(sha256.New, opts.Key)
		v.rep.KeyUsed = true
	} else {
		v.rep.Unproven = unprovenNoKey
	}
	if opts.ExpectHead != "" {
		e := strings.ToLower(strings.TrimSpace(opts.ExpectHead))
		if _, err := hex.DecodeString(e[:len(e)&^1]); err != nil || len(e) < 8 || len(e) > 64 {
			return VerifyReport{}, fmt.Errorf("audit: expected head %q is not a sha256 hex digest (or a prefix of at least 8 digits)", opts.ExpectHead)
		}
		v.expect = []byte(e)
	}
	if cp := opts.Checkpoint; cp != nil {
		if err := cp.valid(); err != nil {
			return VerifyReport{}, err
		}
		v.cp = cp
		v.cpNote = cp.checkMAC(opts.Key)
	}
	lr := newLineReader(r)
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return v.rep, fmt.Errorf("audit: read log: %w", err)
		}
		v.add(l)
	}
	return v.finish(), nil
}

func (v *verifier) finish() VerifyReport {
	if v.pend != nil {
		v.addDamage(v.pend(nil))
		v.pend = nil
	}
	for _, u := range v.unconfirmed {
		v.addDamage(Damage{Line: u.n, Kind: DamageUnconfirmed, Detail: "the record after it is missing and no line's prev names this one: nothing vouches for its content, it may have been edited (a key would prove it)"})
	}
	rep := v.rep
	if v.p1.ok {
		rep.Head = string(v.p1.hex[:])
	}
	if v.expect != nil && !v.expectFound {
		v.addDamage(Damage{Line: rep.Records + 1, Kind: DamageTailCut, Detail: fmt.Sprintf("no line has the expected head %s: records were removed from the end (the log now ends at line %d)", v.expect, rep.Records)})
	}
	if v.cp != nil {
		switch {
		case v.cpNote != "":
			v.addDamage(Damage{Line: int(v.cp.Records), Kind: DamageCheckpoint, Detail: v.cpNote})
			rep.Checkpoint = "INVALID: " + v.cpNote
		case int64(rep.Records) < v.cp.Records:
			v.addDamage(Damage{Line: rep.Records + 1, Kind: DamageTailCut, Detail: fmt.Sprintf("the checkpoint of %s counts %d lines; the log now has %d: records were removed from the end", v.cp.Time.UTC().Format(TimeFormat), v.cp.Records, rep.Records)})
			rep.Checkpoint = "NOT extended: the log is shorter than the checkpoint"
		case !v.cpMatch:
			rep.Checkpoint = "NOT extended: the checkpoint's line has another hash now"
		default:
			rep.Checkpoint = fmt.Sprintf("extended: line %d still has head %s (checkpoint of %s, %s)", v.cp.Records, v.cp.Head, v.cp.Time.UTC().Format(TimeFormat), v.cp.signedText(v.mac != nil))
		}
	}
	all := append(v.chain, v.macs...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Line < all[j].Line })
	rep.DamageCount = len(all) + v.dropped
	if len(all) > maxDamage {
		all = all[:maxDamage]
	}
	rep.Damage = all
	if len(all) > 0 {
		rep.First = &all[0]
	}
	rep.Intact = rep.DamageCount == 0
	rep.Sessions = len(v.sess)
	for _, s := range v.order {
		if v.sess[s]&sessEnded == 0 {
			rep.Unended = append(rep.Unended, s)
		}
	}
	return rep
}
