//go:build !linux

package mcp

import "os"

// ClaimStdout returns stdout; on this system nothing else is redirected, so
// nothing else may write to stdout.
func ClaimStdout() (*os.File, error) { return os.Stdout, nil }
