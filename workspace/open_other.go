//go:build !unix

package workspace

const OpenNoFollow = 0
