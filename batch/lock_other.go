//go:build !unix

package batch

// lockDir is a no-op where flock is missing.
func lockDir(string) (func(), error) { return func() {}, nil }
