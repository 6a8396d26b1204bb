package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// gcProgressAfter is how long a gc step runs before gc says it waits on
// it.
var gcProgressAfter = 2 * time.Second

// gcProgress says on stderr what gc is waiting on when a step outlasts
// gcProgressAfter: one line, rewritten in place on a terminal (and erased
// before gc's results), one line per slow step otherwise; nothing when gc
// is quick.
type gcProgress struct {
	w        io.Writer
	tty      bool
	mu       sync.Mutex
	cur      string
	seq      int
	shown    bool // a line stands on the terminal
	finished bool
}

func newGCProgress(w io.Writer) *gcProgress {
	f, ok := w.(*os.File)
	return &gcProgress{w: w, tty: ok && isTerminal(f)}
}

// step starts a step (the same step again is no new one).
func (p *gcProgress) step(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if what == p.cur || p.finished {
		return
	}
	p.cur = what
	p.seq++
	seq := p.seq
	time.AfterFunc(gcProgressAfter, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if seq != p.seq || p.finished {
			return
		}
		if p.tty {
			fmt.Fprintf(p.w, "\r\033[Kagentbox gc: %s…", what)
			p.shown = true
			return
		}
		fmt.Fprintf(p.w, "agentbox gc: %s…\n", what)
	})
}

// pause erases the line on a terminal before gc prints a result; the
// next slow step shows again.
func (p *gcProgress) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	p.cur = ""
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// done ends the progress: nothing more is said.
func (p *gcProgress) done() {
	p.pause()
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
}
