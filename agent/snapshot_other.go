//go:build !unix

package agent

const openNoFollow = 0
