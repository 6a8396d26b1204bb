package audit

import (
	"bytes"
	"crypto/hmac"
	"encoding/hex"
	"fmt"
	"hash"
)

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

// window is how many recent lines the verifier remembers to resynchronise:
// a line whose prev names one of them continues the chain from there.
const window = 64

type verifier struct {
	rep         VerifyReport
	mac         hash.Hash
	macBuf      [32]byte
	macHex      [64]byte
	expect      []byte
	expectFound bool
	cp          *Checkpoint
	cpNote      string // why the checkpoint itself is invalid
	cpMatch     bool

	p1     link
	recent [window]link // ring of the last lines, p1 included
	pend   func(next *link) Damage
	// The last "deleted" damage: its missing seqs, and its index in chain;
	// seeing one of those seqs later makes it "reordered".
	missLo, missHi int64
	missIdx        int
	covered        int // damage was reported up to this line

	chain, macs []Damage
	dropped     int // damage beyond maxDamage

	sess  map[string]uint8
	order []string

	// Without a key: lines whose successor went missing, until a later
	// line's prev names them (see DamageUnconfirmed).
	unconfirmed []link
}

var genesisHex = []byte(GenesisPrev)

func (v *verifier) addDamage(d Damage) {
	v.covered = max(v.covered, d.Line)
	if len(v.chain)+len(v.macs) >= maxDamage {
		v.dropped++
		return
	}
	v.chain = append(v.chain, d)
}

// addMAC records MAC damage, merging runs of the same kind on consecutive
// lines (a wrong key fails every line).
func (v *verifier) addMAC(n int, kind, detail string) {
	if k := len(v.macs) - 1; k >= 0 && v.macs[k].Kind == kind && max(v.macs[k].Through, v.macs[k].Line) == n-1 {
		v.macs[k].Through = n
		return
	}
	if len(v.chain)+len(v.macs) >= maxDamage {
		v.dropped++
		return
	}
	v.macs = append(v.macs, Damage{Line: n, Kind: kind, Detail: detail})
}

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
	if v.cp != nil && int64(cur.n) == v.cp.Records {
		v.cpMatch = string(cur.hex[:]) == v.cp.Head
		if !v.cpMatch && v.cpNote == "" {
			v.addDamage(Damage{Line: cur.n, Kind: DamageCheckpoint, Detail: fmt.Sprintf("the checkpoint of %s says line %d has hash %s; it now has %s: the log was rewritten since", v.cp.Time.UTC().Format(TimeFormat), cur.n, v.cp.Head, cur.hex[:])})
		}
	}

	if cur.prevOK && len(v.unconfirmed) > 0 {
		for i, u := range v.unconfirmed {
			if u.hex == cur.prev {
				v.unconfirmed = append(v.unconfirmed[:i], v.unconfirmed[i+1:]...)
				break
			}
		}
	}
	switch {
	case v.pend != nil:
		// The pending line is classified by this one; the chain resumes
		// here (a line that is not a record is judged in turn).
		v.addDamage(v.pend(&cur))
		v.pend = nil
		if !cur.parsed {
			v.check(&cur, l)
		}
	case v.missIdx >= 0 && cur.parsed && cur.seq >= v.missLo && cur.seq <= v.missHi:
		d := &v.chain[v.missIdx]
		d.Kind = DamageReordered
		d.Detail = fmt.Sprintf("seq %d at line %d belongs before line %d", cur.seq, cur.n, d.Line)
		v.missIdx = -1
		v.covered = max(v.covered, cur.n)
	default:
		v.check(&cur, l)
	}
	if cur.parsed {
		v.record(&cur, &h, l.b)
	}
	v.p1 = cur
	v.recent[cur.n%window] = cur
}

func (v *verifier) setDeleted(at *link, lo, hi int64, detail string) {
	v.addDamage(Damage{Line: at.n, Kind: DamageDeleted, Detail: detail})
	v.missLo, v.missHi, v.missIdx = lo, hi, -1
	if len(v.chain) > 0 && v.chain[len(v.chain)-1].Line == at.n {
		v.missIdx = len(v.chain) - 1
	}
}

// chainedTo returns the recent line (before p1) whose hash cur's prev
// names.
func (v *verifier) chainedTo(cur *link) (link, bool) {
	if !cur.prevOK {
		return link{}, false
	}
	for n := v.p1.n - 1; n > 0 && n > v.p1.n-window; n-- {
		if j := v.recent[n%window]; j.ok && j.n == n && j.hex == cur.prev {
			return j, true
		}
	}
	return link{}, false
}

// check classifies a break of the chain at cur.
func (v *verifier) check(cur *link, l rawLine) {
	p1 := v.p1
	c := *cur
	if !cur.parsed {
		lastNoNL := !l.nl
		looksRecord := len(l.b) > 0 && l.b[0] == '{'
		v.pend = func(next *link) Damage {
			switch {
			case next == nil && lastNoNL:
				return Damage{Line: c.n, Kind: DamageTruncated, Detail: "incomplete last line: a writer was interrupted mid-record or the file was cut"}
			case next == nil:
				return Damage{Line: c.n, Kind: DamageMalformed, Detail: "not a valid record"}
			case next.prevOK && next.prev == c.hex && looksRecord:
				return Damage{Line: c.n, Kind: DamageTruncated, Detail: "incomplete record (a writer was interrupted mid-line); later records continue the chain"}
			case next.prevOK && next.prev == c.hex:
				return Damage{Line: c.n, Kind: DamageMalformed, Detail: "not a record, though later records chain to it"}
			}
			return Damage{Line: c.n, Kind: DamageEdited, Detail: "not a valid record and the next line's prev does not match it"}
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
			v.addDamage(Damage{Line: cur.n, Kind: DamageEdited, Detail: "the first record's prev is not the genesis value"})
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
				return Damage{Line: c.n, Kind: DamageInserted, Detail: fmt.Sprintf("the next line chains to line %d, skipping this one", p.n)}
			case next != nil && !(next.prevOK && next.prev == c.hex):
				return Damage{Line: c.n, Kind: DamageEdited, Detail: fmt.Sprintf("seq %d where %d was expected, and the next line's prev does not match", c.seq, p.seq+1)}
			case c.seq <= p.seq:
				return Damage{Line: c.n, Kind: DamageInserted, Detail: fmt.Sprintf("seq %d repeats or goes back after seq %d (hashes were recomputed)", c.seq, p.seq)}
			}
			return Damage{Line: c.n, Kind: DamageDeleted, Detail: fmt.Sprintf("seq jumps from %d to %d: %d record(s) removed and the chain recomputed", p.seq, c.seq, c.seq-p.seq-1)}
		}
		return
	}
	if cur.seq == p1.seq && cur.sum == p1.sum {
		v.addDamage(Damage{Line: cur.n, Kind: DamageInserted, Detail: fmt.Sprintf("a copy of line %d", p1.n)})
		return
	}
	if j, ok := v.chainedTo(cur); ok {
		// cur continues the chain from line j: the lines between are not
		// part of it (unless that damage was reported already).
		if v.covered <= j.n {
			skipped := fmt.Sprintf("line %d", j.n+1)
			if p1.n > j.n+1 {
				skipped = fmt.Sprintf("lines %d-%d", j.n+1, p1.n)
			}
			v.addDamage(Damage{Line: j.n + 1, Kind: DamageInserted, Detail: fmt.Sprintf("line %d's prev points to line %d, skipping %s", cur.n, j.n, skipped)})
		}
		return
	}
	switch {
	case cur.seq == p1.seq+1:
		v.addDamage(Damage{Line: p1.n, Kind: DamageEdited, Detail: fmt.Sprintf("hash chain broken: line %d's prev does not match this line", cur.n)})
	case cur.seq > p1.seq+1:
		if v.mac == nil && p1.parsed && len(v.unconfirmed) < maxDamage {
			v.unconfirmed = append(v.unconfirmed, p1)
		}
		v.setDeleted(cur, p1.seq+1, cur.seq-1, fmt.Sprintf("seq jumps from %d to %d: %d record(s) missing before this line", p1.seq, cur.seq, cur.seq-p1.seq-1))
	case cur.seq == p1.seq:
		p := p1
		v.pend = func(next *link) Damage {
			if next != nil && next.prevOK && next.prev == c.hex {
				return Damage{Line: p.n, Kind: DamageInserted, Detail: fmt.Sprintf("seq %d also at line %d, through which the chain continues", p.seq, c.n)}
			}
			return Damage{Line: c.n, Kind: DamageInserted, Detail: fmt.Sprintf("seq %d repeats line %d", c.seq, p.n)}
		}
	default:
		v.addDamage(Damage{Line: cur.n, Kind: DamageReordered, Detail: fmt.Sprintf("seq %d comes after seq %d", cur.seq, p1.seq)})
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
	if v.mac == nil {
		return
	}
	switch {
	case !h.hasMAC:
		v.addMAC(cur.n, DamageMissingMAC, "a key was given but the record has no mac")
	case !v.macOK(line, h.mac):
		v.addMAC(cur.n, DamageBadMAC, "the MAC does not match: the record was forged or rewritten (or the key is wrong)")
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
