package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
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
)

var damageText = map[string]string{
	DamageEdited:     "record edited",
	DamageInserted:   "record inserted",
	DamageDeleted:    "record(s) deleted",
	DamageReordered:  "records reordered",
	DamageTruncated:  "record truncated",
	DamageBadMAC:     "MAC mismatch",
	DamageMissingMAC: "MAC missing",
	DamageMalformed:  "malformed record",
	DamageTailCut:    "records cut from the end",
}

// Damage is the first problem Verify found.
type Damage struct {
	Line   int    `json:"line"` // 1-based; for tail_cut the line after the last
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

func (d Damage) String() string {
	return fmt.Sprintf("line %d: %s (%s)", d.Line, damageText[d.Kind], d.Detail)
}

// VerifyReport is the result of Verify.
type VerifyReport struct {
	Records  int      `json:"records"`  // lines read
	Sessions int      `json:"sessions"` // distinct session ids
	Head     string   `json:"head"`     // sha256 hex of the last line ("" for an empty log)
	Intact   bool     `json:"intact"`
	First    *Damage  `json:"first,omitempty"`
	Unended  []string `json:"unended,omitempty"` // sessions with a session_start and no session_end
	KeyUsed  bool     `json:"key_used"`          // MACs were checked
	MACs     int      `json:"macs"`              // records that carry a mac
}

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
		fmt.Fprintf(&b, "%s\n", r.First)
		fmt.Fprintf(&b, "%s, %s (head %s)\n", plural(r.Records, "record"), plural(r.Sessions, "session"), headOrEmpty(r.Head))
	}
	if !r.KeyUsed && r.MACs > 0 {
		fmt.Fprintf(&b, "note: %d records carry a MAC but no key was given; only the hash chain was checked (set %s)\n", r.MACs, KeyEnv)
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

// Verify reads a whole log and checks that every line's prev is the sha256
// of the line before it (GenesisPrev for the first), that seqs are
// consecutive and, with a key, every MAC. It names the first bad line and
// its kind, lists sessions that never ended, and, with expectHead (a head
// printed by an earlier Verify, or at least its first 8 hex digits), reports
// tail_cut when no line has that hash any more. The error is for read
// failures and a bad expectHead only; damage is in the report.
func Verify(r io.Reader, key []byte, expectHead string) (VerifyReport, error) {
	v := &verifier{sess: map[string]uint8{}}
	if len(key) > 0 {
		v.mac = hmac.New(sha256.New, key)
		v.rep.KeyUsed = true
	}
	if expectHead != "" {
		e := strings.ToLower(strings.TrimSpace(expectHead))
		if _, err := hex.DecodeString(e[:len(e)&^1]); err != nil || len(e) < 8 || len(e) > 64 {
			return VerifyReport{}, fmt.Errorf("audit: expected head %q is not a sha256 hex digest (or a prefix of at least 8 digits)", expectHead)
		}
		v.expect = []byte(e)
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

// link is what the verifier keeps of a line.
type link struct {
	ok     bool // the line exists
	n      int
	sum    [32]byte
	hex    [64]byte
	parsed bool
	seq    int64 // the record's seq; for a non-record, the previous seq + 1
	prev   [64]byte
	prevOK bool // prev is 64 bytes long
}

const (
	sessSeen uint8 = 1 << iota
	sessStarted
	sessEnded
)

type verifier struct {
	rep         VerifyReport
	mac         hash.Hash
	macBuf      [32]byte
	macHex      [64]byte
	expect      []byte
	expectFound bool

	p1, p2 link
	chain  *Damage
	pend   func(next *link) Damage // classification waiting for the next line
	// For "deleted": the missing seqs; seeing one later makes it "reordered".
	missLo, missHi, missAt int64

	macDmg *Damage
	sess   map[string]uint8
	order  []string
}

var genesisHex = []byte(GenesisPrev)

func (v *verifier) add(l rawLine) {
	v.rep.Records++
	cur := link{ok: true, n: l.n, sum: l.sum}
	hex.Encode(cur.hex[:], l.sum[:])
	var h head
	cur.parsed = !l.long && parseHead(l.b, &h) && h.hasSeq
	switch {
	case cur.parsed:
		cur.seq = h.seq
		if len(h.prev) == 64 {
			copy(cur.prev[:], h.prev)
			cur.prevOK = true
		}
	case v.p1.ok:
		cur.seq = v.p1.seq + 1
	default:
		cur.seq = 1
	}
	if v.expect != nil && !v.expectFound && bytes.HasPrefix(cur.hex[:], v.expect) {
		v.expectFound = true
	}

	switch {
	case v.pend != nil:
		d := v.pend(&cur)
		v.pend, v.chain = nil, &d
	case v.chain == nil:
		v.check(&cur, l)
	case v.chain.Kind == DamageDeleted && v.missHi > 0 && cur.parsed && cur.seq >= v.missLo && cur.seq <= v.missHi:
		v.chain.Kind = DamageReordered
		v.chain.Detail = fmt.Sprintf("seq %d at line %d comes after seq %d at line %d", cur.seq, cur.n, v.missAt, v.chain.Line)
		v.missHi = 0
	}
	if cur.parsed {
		v.record(&cur, &h, l.b)
	}
	v.p2, v.p1 = v.p1, cur
}

func (v *verifier) setDeleted(at *link, lo, hi int64, detail string) {
	v.chain = &Damage{Line: at.n, Kind: DamageDeleted, Detail: detail}
	v.missLo, v.missHi, v.missAt = lo, hi, at.seq
}

// check classifies the first break of the chain at cur.
func (v *verifier) check(cur *link, l rawLine) {
	p1, p2 := v.p1, v.p2
	c := *cur
	if !cur.parsed {
		lastNoNL := !l.nl
		looksRecord := len(l.b) > 0 && l.b[0] == '{'
		v.pend = func(next *link) Damage {
			switch {
			case next == nil && lastNoNL:
				return Damage{c.n, DamageTruncated, "incomplete last line: a writer was interrupted mid-record or the file was cut"}
			case next == nil:
				return Damage{c.n, DamageMalformed, "not a valid record"}
			case next.prevOK && next.prev == c.hex && looksRecord:
				return Damage{c.n, DamageTruncated, "incomplete record (a writer was interrupted mid-line); later records continue the chain"}
			case next.prevOK && next.prev == c.hex:
				return Damage{c.n, DamageMalformed, "not a record, though later records chain to it"}
			}
			return Damage{c.n, DamageEdited, "not a valid record and the next line's prev does not match it"}
		}
		return
	}
	if !p1.ok { // first line
		genesis := cur.prevOK && bytes.Equal(cur.prev[:], genesisHex)
		switch {
		case genesis && cur.seq == 1:
		case cur.seq > 1:
			v.setDeleted(cur, 1, cur.seq-1, fmt.Sprintf("the log starts at seq %d: the first %d record(s) were removed", cur.seq, cur.seq-1))
		default:
			v.chain = &Damage{cur.n, DamageEdited, "the first record's prev is not the genesis value"}
		}
		return
	}
	prevOK := cur.prevOK && cur.prev == p1.hex
	if prevOK && cur.seq == p1.seq+1 {
		return
	}
	if prevOK { // chained, but the seq is wrong: decide with the next line
		p := p1
		v.pend = func(next *link) Damage {
			switch {
			case next != nil && next.prevOK && next.prev == p.hex:
				return Damage{c.n, DamageInserted, fmt.Sprintf("the next line chains to line %d, skipping this one", p.n)}
			case next != nil && !(next.prevOK && next.prev == c.hex):
				return Damage{c.n, DamageEdited, fmt.Sprintf("seq %d where %d was expected, and the next line's prev does not match", c.seq, p.seq+1)}
			case c.seq <= p.seq:
				return Damage{c.n, DamageInserted, fmt.Sprintf("seq %d repeats or goes back after seq %d (hashes were recomputed)", c.seq, p.seq)}
			}
			return Damage{c.n, DamageDeleted, fmt.Sprintf("seq jumps from %d to %d: %d record(s) removed and the chain recomputed", p.seq, c.seq, c.seq-p.seq-1)}
		}
		return
	}
	switch {
	case cur.seq == p1.seq && cur.sum == p1.sum:
		v.chain = &Damage{cur.n, DamageInserted, fmt.Sprintf("a copy of line %d", p1.n)}
	case p2.ok && cur.prevOK && cur.prev == p2.hex:
		v.chain = &Damage{p1.n, DamageInserted, fmt.Sprintf("line %d's prev points to line %d, skipping this one", cur.n, p2.n)}
	case cur.seq == p1.seq+1:
		v.chain = &Damage{p1.n, DamageEdited, fmt.Sprintf("hash chain broken: line %d's prev does not match this line", cur.n)}
	case cur.seq > p1.seq+1:
		v.setDeleted(cur, p1.seq+1, cur.seq-1, fmt.Sprintf("seq jumps from %d to %d: %d record(s) missing before this line", p1.seq, cur.seq, cur.seq-p1.seq-1))
	case cur.seq == p1.seq:
		p := p1
		v.pend = func(next *link) Damage {
			if next != nil && next.prevOK && next.prev == c.hex {
				return Damage{p.n, DamageInserted, fmt.Sprintf("seq %d also at line %d, through which the chain continues", p.seq, c.n)}
			}
			return Damage{c.n, DamageInserted, fmt.Sprintf("seq %d repeats line %d", c.seq, p.n)}
		}
	default:
		v.chain = &Damage{cur.n, DamageReordered, fmt.Sprintf("seq %d comes after seq %d", cur.seq, p1.seq)}
	}
}

// record tracks sessions and checks the MAC of a parsed line.
func (v *verifier) record(cur *link, h *head, line []byte) {
	if len(h.session) > 0 {
		f, ok := v.sess[string(h.session)]
		if !ok {
			f = sessSeen
		}
		switch string(h.event) {
		case EventSessionStart:
			if f&sessStarted == 0 {
				v.order = append(v.order, string(h.session))
			}
			f |= sessStarted
		case EventSessionEnd:
			f |= sessEnded
		}
		v.sess[string(h.session)] = f
	}
	if h.hasMAC {
		v.rep.MACs++
	}
	if v.mac == nil || v.macDmg != nil {
		return
	}
	switch {
	case !h.hasMAC:
		v.macDmg = &Damage{cur.n, DamageMissingMAC, "a key was given but the record has no mac"}
	case !v.macOK(line, h.mac):
		v.macDmg = &Damage{cur.n, DamageBadMAC, "the MAC does not match: the record was forged or rewritten (or the key is wrong)"}
	}
}

// macOK checks the canonical form (see encodeLine): the line ends with
// `,"mac":"<64 hex>"}` and the MAC covers the line without that member.
func (v *verifier) macOK(line, mac []byte) bool {
	if len(line) < macSuffixLen+2 {
		return false
	}
	cut := len(line) - macSuffixLen
	s := line[cut:]
	if !bytes.HasPrefix(s, []byte(`,"mac":"`)) || !bytes.HasSuffix(s, []byte(`"}`)) || !bytes.Equal(s[8:72], mac) {
		return false
	}
	v.mac.Reset()
	v.mac.Write(line[:cut])
	v.mac.Write([]byte{'}'})
	hex.Encode(v.macHex[:], v.mac.Sum(v.macBuf[:0]))
	return hmac.Equal(v.macHex[:], mac)
}

func (v *verifier) finish() VerifyReport {
	if v.pend != nil {
		d := v.pend(nil)
		v.pend, v.chain = nil, &d
	}
	rep := v.rep
	if v.p1.ok {
		rep.Head = string(v.p1.hex[:])
	}
	var tail *Damage
	if v.expect != nil && !v.expectFound {
		tail = &Damage{rep.Records + 1, DamageTailCut, fmt.Sprintf("no line has the expected head %s: records were removed from the end (the log now ends at line %d)", v.expect, rep.Records)}
	}
	for _, d := range []*Damage{v.chain, v.macDmg, tail} {
		if d != nil && (rep.First == nil || d.Line < rep.First.Line) {
			rep.First = d
		}
	}
	rep.Intact = rep.First == nil
	rep.Sessions = len(v.sess)
	for _, s := range v.order {
		if v.sess[s]&sessEnded == 0 {
			rep.Unended = append(rep.Unended, s)
		}
	}
	return rep
}
