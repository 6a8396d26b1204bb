package sandbox

import (
	"context"
	"errors"
	"sync"
)

// Live is the set of a runtime's open sessions, so that CloseAll can close
// what is still open (the CLI calls it on SIGINT/SIGTERM). The zero value
// is ready to use.
type Live[S interface{ Close(context.Context) error }] struct {
	mu sync.Mutex
	m  map[string]S
}

// Add records an open session under its id.
func (l *Live[S]) Add(id string, s S) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]S{}
	}
	l.m[id] = s
}

// Remove forgets a session (it closed).
func (l *Live[S]) Remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, id)
}

// CloseAll closes every session still open and joins their errors.
func (l *Live[S]) CloseAll(ctx context.Context) error {
	l.mu.Lock()
	all := make([]S, 0, len(l.m))
	for _, s := range l.m {
		all = append(all, s)
	}
	l.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}
