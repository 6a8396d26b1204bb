// Package proof makes an audit log checkable by outsiders with standard
// tools: the log's records are the leaves of an RFC 6962 Merkle tree
// (golang.org/x/mod/sumdb/tlog; a leaf is one line's bytes without its
// newline, leaf index = line - 1), a checkpoint is a C2SP signed note
// (golang.org/x/mod/sumdb/note, Ed25519) of the tree's size and root
// hash, and inclusion and consistency proofs are printed as base64 hashes,
// one per line, that any tlog implementation checks.
package proof
