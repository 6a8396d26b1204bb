//go:build !unix

package fstree

const OpenNoFollow = 0
